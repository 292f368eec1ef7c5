"""The intent language: load a file into a positioned tree, type it, check the domain rules, describe its schema.

Layer 1 of the pipeline (load -> model -> check). Nothing here renders or writes output.
"""

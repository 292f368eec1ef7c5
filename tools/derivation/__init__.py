"""What the derive scripts under tools/ share, and one module per source that tools/derive_reference.py derives."""

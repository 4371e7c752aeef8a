# python/python.mk - the melpipe Python package (python/), included by the
# top Makefile.
#
#   make python        build the package's wheel into build/python/
#                      (install it with: pip install build/python/melpipe-*.whl,
#                      or straight from the source: pip install ./python)
#   make python-check  run python/tests with the test venv's Python
#                      (scripts/setup makes it, pytest included); the
#                      datasets are made with the programs in $(BIN)

PY_VENV := .dev/venv/bin/python
PY_SRC := $(shell find python/melpipe -name '*.py') python/pyproject.toml

python: build/python/.stamp

build/python/.stamp: $(PY_SRC)
	@mkdir -p build/python
	@[ "$(V)" = 1 ] || echo "  WHEEL   build/python"
	$(Q)$(CURDIR)/$(PY_VENV) -m pip wheel -q --no-deps --disable-pip-version-check \
		-w build/python ./python
	$(Q)touch $@

python-check: setup all
	$(Q)cd python && MELPIPE_BIN=$(CURDIR)/$(BIN) \
		$(CURDIR)/$(PY_VENV) -m pytest -q -p no:cacheprovider tests

.PHONY: python python-check

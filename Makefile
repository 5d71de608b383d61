# GreyWind: `make run` sets everything up and starts the bot; `make test` sets everything up and
# runs the checks and the test suite. Both need nothing but Python 3.11+ and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-deps lint bench clean

$(STAMP): pyproject.toml examples/greywind-dice/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,plot]'
	$(BIN)/python -m pip install --quiet -e examples/greywind-dice
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python bot.py

lint: $(STAMP)
	$(BIN)/ruff check runtime plugins bench tests examples bot.py
	$(BIN)/ruff format --check runtime plugins bench tests examples bot.py
	$(BIN)/mypy -p runtime -p plugins.greywind

# System packages and services some tests need (a browser, a database server): each script in
# scripts/test-deps/ installs what is missing and is a no-op when it is there.
test-deps:
	@for s in scripts/test-deps/*.sh; do if [ -e "$$s" ]; then bash "$$s" || exit 1; fi; done

test: lint test-deps
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/kernel.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

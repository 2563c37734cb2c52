# `make demo` and `make test` each create the virtual environment on first use (scripts/setup.sh).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.refind-setup-done

.PHONY: demo test test-llm lint setup clean perf docs

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh $(VENV)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/refind demo

test: $(STAMP)
	$(VENV)/bin/ruff check refind benchmarks tests examples scripts
	$(PY) -m pytest --durations=15

# the real-model suite (scripts/local-llm builds llama-server and installs the model once; about 5 minutes)
test-llm: $(STAMP)
	scripts/local-llm install
	$(PY) -m pytest -m local_llm -o addopts=-ra

lint: $(STAMP)
	$(VENV)/bin/ruff check refind benchmarks tests examples scripts
	$(VENV)/bin/ruff format --check refind benchmarks tests examples scripts
	$(VENV)/bin/mypy

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict -d out/site

perf: $(STAMP)
	$(PY) -m benchmarks perf --messages 1000000 --users 1000 --out out/perf

clean:
	rm -rf $(VENV) out .pytest_cache

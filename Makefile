# `make demo` and `make test` each create the virtual environment on first use (scripts/setup.sh).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.refind-setup-done

.PHONY: demo install uninstall test check test-llm local-llm lint setup clean perf docs

# install: `refind` on your PATH, for every new shell: a link to this clone's .venv/bin/refind (the
# environment `make setup` builds, pyserini's jar and all) in BIN, ~/.local/bin by default (where pip --user,
# pipx and uv tool put commands). It says so when BIN is not on PATH, and how to put it there.
BIN ?= $(HOME)/.local/bin

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh $(VENV)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/refind demo

install: $(STAMP)
	@mkdir -p "$(BIN)"
	@ln -sfn "$(abspath $(VENV))/bin/refind" "$(BIN)/refind"
	@echo "refind: $(BIN)/refind -> $(abspath $(VENV))/bin/refind ($$("$(BIN)/refind" --version))"
	@case ":$$PATH:" in *":$(BIN):"*) ;; *) \
		echo "refind: $(BIN) is not on your PATH; add this line to ~/.profile (or ~/.bashrc, ~/.zshrc)" \
			"and open a new shell:"; \
		echo '  export PATH="$(BIN):$$PATH"';; esac

uninstall:
	@if [ -L "$(BIN)/refind" ]; then rm "$(BIN)/refind" && echo "refind: removed $(BIN)/refind"; fi

# local-llm: llama-server built and the model installed once into a cache outside the repository (a
# no-op once done; the first time about 8 minutes on 2 idle cores). Without cmake or a C++ compiler the
# real-model tests are skipped, unless REFIND_REQUIRE_LOCAL_LLM=1 (CI) makes that a failure.
local-llm: $(STAMP)
	@if [ "$$REFIND_REQUIRE_LOCAL_LLM" = 1 ] || { command -v cmake && command -v c++; } >/dev/null; then \
		PYTHON=$(PY) scripts/local-llm install >/dev/null; \
	else echo "local-llm: cmake or c++ missing: the real-model tests will be skipped"; fi

test: $(STAMP) local-llm
	$(VENV)/bin/ruff check refind benchmarks tests examples scripts
	$(PY) -m pytest --durations=15

# check: the fast tier, for every change: ruff, mypy and the tests not marked slow (no OpenSearch node, no
# local model, no browser, no daemon, no soak or kill -9: tests/conftest.py says which). Under 3 minutes on
# the project's 2-core machine; `make test` still runs everything, and CI runs `make test`.
check: lint
	$(PY) -m pytest -m "not slow" -q --durations=10

# only the real-model suite (marker local_llm)
test-llm: $(STAMP) local-llm
	$(PY) -m pytest -m local_llm

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

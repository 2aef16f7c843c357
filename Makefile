# shootdown: build, run and test. `make help` lists the targets.
#
# Everything generated goes under build/. Sources are listed explicitly
# (no directory scans); dependencies come from the compiler (-MD).

BUILD := build

# --- Toolchain -------------------------------------------------------------
# In order: x86_64-elf-gcc on PATH, the host gcc on an x86-64 host, clang
# targeting bare x86-64 with ld.lld. CC= and LD= override the choice.
HOST_ARCH := $(shell uname -m)
ifeq ($(origin CC),default)
  ifneq ($(shell command -v x86_64-elf-gcc 2>/dev/null),)
    CC := x86_64-elf-gcc
    LD_DEFAULT := x86_64-elf-ld
  else ifeq ($(HOST_ARCH),x86_64)
    CC := gcc
  else
    CC := clang
  endif
endif
CC_IS_CLANG := $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),1,)
ifeq ($(CC_IS_CLANG),1)
  TARGET_FLAGS := --target=x86_64-unknown-none-elf
  LD_DEFAULT ?= ld.lld
endif
LD_DEFAULT ?= ld
ifeq ($(origin LD),default)
  LD := $(LD_DEFAULT)
endif
NASM ?= nasm
NM ?= nm
OBJDUMP ?= objdump
PYTHON ?= python3
HOSTCC ?= cc

# --- Flags -----------------------------------------------------------------
WARNINGS := -Wall -Wextra -Werror -Wno-unused-parameter
KERNEL_CFLAGS := $(TARGET_FLAGS) -std=gnu11 -O2 -g $(WARNINGS) \
	-ffreestanding -nostdinc -fno-stack-protector -fno-pic -fno-pie \
	-fno-common -fno-strict-aliasing -fno-omit-frame-pointer \
	-fno-asynchronous-unwind-tables -fno-unwind-tables \
	-mno-red-zone -mcmodel=kernel -mgeneral-regs-only \
	-mno-mmx -mno-sse -mno-sse2 \
	-I. -MD -MP
KERNEL_LDFLAGS := -nostdlib -static -z max-page-size=0x1000 \
	-z noexecstack -T linker.ld
NASM_FLAGS := -f elf64 -I.

# --- Sources ---------------------------------------------------------------
BOOT_ASM := boot/header.asm boot/entry.asm
KERNEL_ASM := kernel/isr.asm kernel/probe.asm smp/trampoline.asm \
	sched/switch.asm proc/syscall_entry.asm
KERNEL_C := \
	kernel/main.c \
	lib/string.c \
	lib/format.c \
	kernel/kprintf.c \
	kernel/console.c \
	kernel/serial.c \
	kernel/fbcon.c \
	kernel/font.c \
	lib/cmdline.c \
	kernel/option_registry.c \
	kernel/multiboot2.c \
	kernel/boot_modules.c \
	kernel/cpu.c \
	kernel/gdt.c \
	kernel/idt.c \
	kernel/trap.c \
	kernel/extable.c \
	kernel/panic.c \
	kernel/symbols.c \
	kernel/platform.c \
	kernel/crash.c \
	acpi/acpi.c \
	acpi/tables.c \
	apic/lapic.c \
	apic/xapic.c \
	apic/x2apic.c \
	apic/pic.c \
	apic/ioapic.c \
	apic/tsc.c \
	apic/timer.c \
	smp/percpu.c \
	sched/fpu.c \
	sched/thread.c \
	sched/sched.c \
	sched/wait.c \
	proc/task.c \
	proc/elf.c \
	proc/uaccess.c \
	proc/syscall.c \
	proc/ipc.c \
	mm/mm.c \
	smp/smp.c \
	smp/call.c \
	smp/call_queue.c \
	mm/kstack.c \
	mm/memmap.c \
	mm/frame_alloc.c \
	mm/pmm.c \
	mm/pagetable.c \
	mm/kmap.c \
	mm/heap.c \
	mm/tlb.c \
	mm/tlb_batch.c \
	mm/tlb_hw.c \
	mm/tlb_options.c \
	mm/tlb_stats.c \
	bench/harness.c \
	bench/tlb_view.c \
	bench/fixture.c \
	bench/prim.c \
	bench/switch.c \
	bench/flush.c \
	bench/scale.c \
	tests/ktest.c \
	tests/kernel/test_format.c \
	tests/kernel/test_mm.c \
	tests/kernel/test_trap.c \
	tests/kernel/test_boot.c \
	tests/kernel/test_time.c \
	tests/kernel/test_acpi.c \
	tests/kernel/test_smp.c \
	tests/kernel/test_sched.c \
	tests/kernel/test_user.c \
	tests/kernel/test_tlb.c \
	tests/kernel/tlb_oracle.c \
	tests/kernel/tlb_oracle_threads.c

KERNEL_OBJS := $(BOOT_ASM:%.asm=$(BUILD)/%.o) $(KERNEL_ASM:%.asm=$(BUILD)/%.o) \
	$(KERNEL_C:%.c=$(BUILD)/%.o) $(BUILD)/kernel/font_psf.o

KERNEL_ELF := $(BUILD)/shootdown.elf

# User programs: one .c file each, linked with the runtime in user/lib/.
USER_PROGRAMS := hello spin fault fuzz pingpong threads bench
USER_LIB_C := user/lib/syscall.c user/lib/ulib.c
USER_LIB_H := user/lib/syscall.h user/lib/ulib.h
USER_C := $(USER_LIB_C) $(USER_PROGRAMS:%=user/%.c)
USER_LIB_OBJS := $(BUILD)/user/lib/start.o $(BUILD)/user/lib/syscall.o \
	$(BUILD)/user/lib/ulib.o $(BUILD)/user/lib/format.o \
	$(BUILD)/user/lib/string.o
USER_OBJS := $(USER_PROGRAMS:%=$(BUILD)/user/%.o)
USER_ELFS := $(USER_PROGRAMS:%=$(BUILD)/user/%.elf)
ISO := $(BUILD)/shootdown.iso

.PHONY: all iso run test deps clean format check qemu-gdb help host-tests \
	bench bench-compare plots mutants docs

all: $(KERNEL_ELF) $(BUILD)/shootdown.lst $(BUILD)/shootdown.map $(USER_ELFS)

iso: $(ISO)

# --- Kernel ----------------------------------------------------------------
$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) -c $< -o $@

# NASM's own dependency output misses %include files: list them here.
ASM_INCLUDES := boot/consts.inc kernel/trap_frame.inc

$(BUILD)/%.o: %.asm $(ASM_INCLUDES) Makefile
	@mkdir -p $(dir $@)
	$(NASM) $(NASM_FLAGS) -MD $(@:.o=.d) -MT $@ $< -o $@

# The console font: drawn as text in kernel/font.txt, compiled to PSF2 and
# embedded with NASM's incbin (symbols font_psf_start/font_psf_end).
$(BUILD)/kernel/font.psf: kernel/font.txt tools/mkfont.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/mkfont.py kernel/font.txt $@

$(BUILD)/kernel/font_psf.o: $(BUILD)/kernel/font.psf
	printf 'section .rodata\nglobal font_psf_start\nglobal font_psf_end\nfont_psf_start: incbin "%s"\nfont_psf_end:\n' $< > $(BUILD)/kernel/font_psf.asm
	$(NASM) -f elf64 $(BUILD)/kernel/font_psf.asm -o $@

# The kernel is linked twice: the first link gives the addresses of the
# functions, which become the symbol table (section .ksyms, placed last by
# linker.ld so it moves nothing) of the second.
$(BUILD)/ksyms.pass1.asm: tools/mksyms.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/mksyms.py /dev/null > $@

$(BUILD)/shootdown.pass1.elf: $(KERNEL_OBJS) $(BUILD)/ksyms.pass1.o linker.ld
	$(LD) $(KERNEL_LDFLAGS) -o $@ $(KERNEL_OBJS) $(BUILD)/ksyms.pass1.o

$(BUILD)/ksyms.pass2.asm: $(BUILD)/shootdown.pass1.elf tools/mksyms.py
	$(NM) -n --defined-only $< > $(BUILD)/shootdown.pass1.nm
	$(PYTHON) tools/mksyms.py $(BUILD)/shootdown.pass1.nm > $@

$(BUILD)/ksyms.%.o: $(BUILD)/ksyms.%.asm
	$(NASM) -f elf64 $< -o $@

$(KERNEL_ELF): $(KERNEL_OBJS) $(BUILD)/ksyms.pass2.o linker.ld
	$(LD) $(KERNEL_LDFLAGS) -o $@ $(KERNEL_OBJS) $(BUILD)/ksyms.pass2.o
	@$(NM) -n --defined-only $@ | grep -i ' t ' > $@.text-symbols
	@grep -i ' t ' $(BUILD)/shootdown.pass1.nm | cmp -s - $@.text-symbols || \
		{ echo "function addresses moved between links"; exit 1; }

$(BUILD)/shootdown.lst: $(KERNEL_ELF)
	$(OBJDUMP) -d -S -M intel $< > $@

$(BUILD)/shootdown.map: $(KERNEL_ELF)
	$(NM) -n -C $< > $@

# The USB-stick image carries the user programs as boot modules too.
$(ISO): $(KERNEL_ELF) $(USER_ELFS) tools/mkiso.sh
	tools/mkiso.sh $(USER_ELFS:%=--module %) $@ $(KERNEL_ELF)

# --- User programs ---------------------------------------------------------
# Static ELF executables at 0x400000 (user/linker.ld), handed to the kernel
# as multiboot2 modules. Unlike the kernel, user code may use the red zone
# (interrupts arrive on the kernel stack, not below the user RSP) and SSE.
# format.o is the kernel's formatter, pure C, compiled again for user space.
USER_CFLAGS := $(TARGET_FLAGS) -std=gnu11 -O2 -g $(WARNINGS) \
	-ffreestanding -nostdinc -fno-stack-protector -fno-pic -fno-pie \
	-fno-common -fno-omit-frame-pointer \
	-fno-asynchronous-unwind-tables -fno-unwind-tables \
	-I. -MD -MP
USER_LDFLAGS := -nostdlib -static -z max-page-size=4096 -z noexecstack \
	-T user/linker.ld

$(BUILD)/user/%.o: user/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -c $< -o $@

# The kernel's pure formatter and string functions serve user space too.
$(BUILD)/user/lib/format.o: lib/format.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -c $< -o $@

$(BUILD)/user/lib/string.o: lib/string.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -c $< -o $@

$(USER_ELFS): $(BUILD)/user/%.elf: $(BUILD)/user/%.o $(USER_LIB_OBJS) \
		user/linker.ld
	$(LD) $(USER_LDFLAGS) -o $@ $< $(USER_LIB_OBJS)

# --- Running ---------------------------------------------------------------
# Variables for run and test (see README.md): EMU SMP MEM ACCEL CPU FIRMWARE
# MACHINE CMDLINE QEMU_ARGS ICOUNT TIMEOUT.
RUN_VARS := EMU SMP MEM ACCEL CPU FIRMWARE MACHINE CMDLINE QEMU_ARGS ICOUNT TIMEOUT
RUN_ENV := $(foreach v,$(RUN_VARS),$(if $(filter-out undefined,$(origin $(v))),$(v)="$($(v))"))

deps:
	@tools/deps.sh

# ICOUNT=1 also tells the kernel (option icount) that its TSC counts
# instructions; tools/bench.py does the same for bench and bench-compare.
ICOUNT_ON := $(filter-out 0 no false off,$(ICOUNT))
RUN_CMDLINE := $(if $(ICOUNT_ON),CMDLINE="$(strip $(CMDLINE) icount)")

# The kernel's default job is the benchmark suite (bench/).
run: deps all
	@env $(RUN_ENV) $(RUN_CMDLINE) $(PYTHON) tools/boot.py run $(KERNEL_ELF)

qemu-gdb: deps all
	@env $(RUN_ENV) $(PYTHON) tools/boot.py gdb $(KERNEL_ELF)

# --- Benchmarks --------------------------------------------------------------
# Results: $(BUILD)/bench/<timestamp>.json. A and B: kernel options, e.g.
# make bench-compare A="pcid=on" B="pcid=off". Plots: $(BUILD)/bench/plots.
bench: deps all
	@env $(RUN_ENV) $(PYTHON) tools/bench.py run $(KERNEL_ELF)

bench-compare: deps all
	@env $(RUN_ENV) $(PYTHON) tools/bench.py compare $(KERNEL_ELF) "$(A)" "$(B)"

plots: deps
	@$(PYTHON) tools/bench.py plots --dir $(BUILD)/bench

# --- Tests -----------------------------------------------------------------
HOST_TEST_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -I. \
	-fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
HOST_TESTS := format cmdline multiboot2 memmap frame_alloc \
	acpi_tables elf
HOST_TEST_BINS := $(HOST_TESTS:%=$(BUILD)/host/test_%)

$(BUILD)/host/test_format: tests/host/test_format.c lib/format.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_cmdline: tests/host/test_cmdline.c lib/cmdline.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_multiboot2: tests/host/test_multiboot2.c kernel/multiboot2.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_memmap: tests/host/test_memmap.c mm/memmap.c tests/host/host_test.h
$(BUILD)/host/test_frame_alloc: tests/host/test_frame_alloc.c mm/frame_alloc.c tests/host/host_test.h
$(BUILD)/host/test_acpi_tables: tests/host/test_acpi_tables.c acpi/tables.c tests/host/host_test.h
# test_elf also checks the real user programs, so they must be built first.
$(BUILD)/host/test_elf: tests/host/test_elf.c proc/elf.c tests/host/host_test.h $(USER_ELFS)
$(BUILD)/host/test_elf: HOST_TEST_CFLAGS += -DUSER_ELF_DIR='"$(BUILD)/user"'

$(BUILD)/host/test_%:
	@mkdir -p $(dir $@)
	$(HOSTCC) $(HOST_TEST_CFLAGS) -o $@ $(filter %.c,$^)

# The TLB protocol on a simulated machine with threads for CPUs
# (docs/tlb-simulator.md). Compiled unchanged with SHOOTDOWN_SIM: mm/tlb.c,
# mm/tlb_batch.c, mm/pagetable.c, and mm/mm.c, mm/kmap.c, mm/kstack.c
# (included by tlb_sim_mmfile.c and tlb_sim_kfiles.c, which reset their
# state between runs). tests/host/sim_include comes first on the include
# path: its kernel/x86.h is the simulated CPU's. mm_get/mm_put are wrapped
# (--wrap) so the simulator checks every reference taken and dropped.
TLB_SIM_C := tests/host/test_tlb_sim.c tests/host/tlb_sim_sched.c \
	tests/host/tlb_sim_mmu.c tests/host/tlb_sim_kernel.c \
	tests/host/tlb_sim_oracle.c tests/host/tlb_sim_workload.c \
	tests/host/tlb_sim_policy.c tests/host/tlb_sim_trace.c \
	tests/host/tlb_sim_search.c tests/host/tlb_sim_memory.c \
	tests/host/tlb_sim_host.c tests/host/tlb_sim_kfiles.c \
	tests/host/tlb_sim_mmfile.c mm/tlb.c mm/tlb_batch.c mm/pagetable.c \
	smp/call_queue.c \
	mm/tlb_options.c lib/cmdline.c lib/format.c
TLB_SIM_DEPS := tests/host/tlb_sim.h tests/host/sim_include/kernel/x86.h \
	mm/mm.c mm/kmap.c mm/kstack.c mm/tlb.h mm/tlb_options.h mm/tlb_hw.h \
	mm/tlb_batch.h mm/mm.h mm/pagetable.h mm/layout.h mm/kmap.h \
	mm/kstack.h smp/shared.h smp/spinlock.h smp/cpumask.h smp/call.h \
	smp/call_hw.h smp/call_queue.h kernel/option_registry.h kernel/trap.h
# The simulator's compiler flags: the host tests' (sanitizers on) unless
# told otherwise. Mutation testing (tools/mutants.py) builds each mutant
# with the same warnings, -O2 and no sanitizers: several times faster.
TLB_SIM_CFLAGS ?= $(HOST_TEST_CFLAGS)
TLB_SIM_FLAGS = -Itests/host/sim_include $(TLB_SIM_CFLAGS) \
	-DSHOOTDOWN_SIM -DMAX_CPUS=64 -pthread \
	-Wl,--wrap=mm_get,--wrap=mm_put
HOST_TEST_BINS += $(BUILD)/host/tlb_sim

$(BUILD)/host/tlb_sim: $(TLB_SIM_C) $(TLB_SIM_DEPS)
	@mkdir -p $(dir $@)
	$(HOSTCC) $(TLB_SIM_FLAGS) -o $@ $(TLB_SIM_C)

host-tests: $(HOST_TEST_BINS)

test: deps all host-tests
	@env $(RUN_ENV) $(PYTHON) tools/run-tests.py $(KERNEL_ELF) $(HOST_TEST_BINS)

# Mutation testing of the simulator (docs/tlb-simulator.md): every mistake
# in tests/mutants/ (or those named, MUTANTS="a b") must make a case fail.
# Scratch copies and results: build/mutants/ (tools/mutants.py).
mutants:
	@$(PYTHON) tools/mutants.py $(MUTANTS)

# --- Hygiene ---------------------------------------------------------------
FORMAT_FILES = $(filter %.c %.h,$(KERNEL_C) $(wildcard */*.h tests/*/*.h tests/host/*.c)) \
	proc/elf.c $(USER_C) $(USER_LIB_H)

format:
	clang-format -i $(FORMAT_FILES)

# The layers (docs/architecture.layers) and headers that compile alone.
CHECK_HEADERS := --headers kernel "$(CC) $(KERNEL_CFLAGS)" \
	--headers user "$(CC) $(USER_CFLAGS)" \
	--headers host "$(HOSTCC) -Itests/host/sim_include $(HOST_TEST_CFLAGS) -DSHOOTDOWN_SIM"

check:
	$(PYTHON) tools/check-consts.py
	$(PYTHON) tools/check-layers.py $(CHECK_HEADERS)
	clang-format --dry-run -Werror $(FORMAT_FILES)
	cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
		--enable=warning,performance,portability \
		--suppress=missingIncludeSystem -I. $(KERNEL_C) proc/elf.c \
		$(USER_C)

# docs/architecture.dot and .svg, drawn from docs/architecture.layers.
docs:
	$(PYTHON) tools/check-layers.py --render

clean:
	rm -rf $(BUILD)

help:
	@echo "shootdown targets:"
	@echo "  all       build the kernel (build/shootdown.elf, .lst, .map) and"
	@echo "            the user programs (build/user/*.elf)"
	@echo "  iso       build the bootable hybrid BIOS/UEFI image build/shootdown.iso"
	@echo "  run       install what is missing, build, boot in QEMU, run the benchmarks"
	@echo "  bench     the same, and keep the results in build/bench/<timestamp>.json"
	@echo "  bench-compare  two runs, kernel options A=\"...\" and B=\"...\", side by side"
	@echo "  plots     PNG charts of the newest results (build/bench/plots, gnuplot)"
	@echo "  test      host unit tests plus every QEMU/Bochs configuration; ends 'N passed, N failed'"
	@echo "  mutants   mutation testing: each mistake in tests/mutants/ must fail a simulator case"
	@echo "            (MUTANTS=\"a b\" for some); ends 'mutants: K killed, S survived of N'"
	@echo "  deps      install the packages run and test need (apt-get)"
	@echo "  qemu-gdb  boot and wait for gdb on localhost:1234"
	@echo "  format    clang-format the sources in place"
	@echo "  check     format check, cppcheck, asm/C constant agreement, layers, headers alone"
	@echo "  docs      redraw docs/architecture.svg from docs/architecture.layers"
	@echo "  clean     remove build/"
	@echo "variables: EMU SMP MEM ACCEL CPU FIRMWARE MACHINE CMDLINE QEMU_ARGS ICOUNT TIMEOUT CC LD MUTANTS"

-include $(KERNEL_OBJS:.o=.d) $(USER_OBJS:.o=.d) $(USER_LIB_OBJS:.o=.d)

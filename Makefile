# shootdown: build, run and test. `make help` lists the targets.
#
# Everything generated goes under build/. Sources are listed explicitly
# (no directory scans); dependencies come from the compiler (-MD).

BUILD := build

# --- Output ----------------------------------------------------------------
# Kbuild-style: each step prints one line, a tag and the file it reads or
# makes ("  CC      mm/tlb.c"); `make V=1` prints the full commands instead,
# `make -s` nothing. The compiler's messages appear either way. A rule runs a
# step with $(call cmd,NAME): cmd_NAME is the command, quiet_cmd_NAME its tag
# and file, tools_NAME the variables naming the programs it runs (each must
# name a command on PATH: a clear error otherwise, only when the step runs).
# V counts only on the command line, as in Kbuild: a V in the environment is
# someone else's.
ifeq ($(origin V),command line)
  VERBOSE := $(V)
endif
ifeq ($(VERBOSE),1)
  Q :=
else ifneq ($(filter-out 0,$(VERBOSE)),)
  $(error V=$(V): use V=1 for the full commands, or V=0 (the default) for one line per step)
else ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
  Q := @
  quiet := silent
else
  Q := @
  quiet := quiet
endif

cmd = $(foreach t,$(tools_$(1)),$(call need_tool,$(t)))$(cmd_prefix_$(quiet)) $(cmd_$(1))
cmd_prefix_quiet = @printf '  %-7s %s\n' '$(firstword $(quiet_cmd_$(1)))' \
	'$(wordlist 2,$(words $(quiet_cmd_$(1))),$(quiet_cmd_$(1)))';
cmd_prefix_silent = @
need_tool = $(if $(shell command -v $(firstword $($(1))) 2>/dev/null),,$(error $(strip \
	$(1)=$($(1)): no such command$(if $(tool_hint_$(1)),; $(tool_hint_$(1))))))
tool_hint_CC := the kernel's C compiler, e.g. CC=gcc (package gcc) or CC=clang (package clang)
tool_hint_LD := the linker, ld (package binutils) or ld.lld (package lld) with clang
tool_hint_HOSTCC := the host tests' compiler, e.g. HOSTCC=cc (package gcc) or HOSTCC=clang
tool_hint_NM := package binutils
tool_hint_OBJDUMP := package binutils
tool_hint_PYTHON := package python3
tool_hint_NASM := the assembler, package nasm (make deps)
tool_hint_CLANG_FORMAT := package clang-format (make deps)
tool_hint_CPPCHECK := package cppcheck (make deps)

# BUILD is removed by make clean: it must be a directory of its own.
ifneq ($(words $(BUILD)),1)
  $(error BUILD=$(BUILD): name one directory without spaces, e.g. BUILD=build-clang)
endif
ifneq ($(filter . .. / ./ ../,$(BUILD))$(wildcard $(BUILD)/Makefile $(BUILD)/*.c $(BUILD)/*.h $(BUILD)/.git),)
  $(error BUILD=$(BUILD) holds sources or is the tree itself; make clean would remove it: choose e.g. BUILD=build-clang)
endif

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
# The tools run as modules (python3 -m tools.<job>.<tool>) from here, and
# leave no __pycache__ in the source tree.
export PYTHONDONTWRITEBYTECODE := 1
HOSTCC ?= cc
CLANG_FORMAT ?= clang-format
CPPCHECK ?= cppcheck

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

# INJECT=1 builds the deliberate protocol bugs in (lib/inject.h): the kernel
# that tlb_bug=, ipc_bug= and call_bug= need. `make inject` makes that kernel
# in $(BUILD)/inject/, beside the default one, which has none of their checks.
ifeq ($(origin INJECT),undefined)
else ifeq ($(INJECT),1)
  KERNEL_CFLAGS += -DINJECT_BUILT=1
else ifneq ($(INJECT),0)
  $(error INJECT=$(INJECT): use INJECT=1 to build the deliberate bugs in, or INJECT=0)
endif

# --- Sources ---------------------------------------------------------------
# One list per folder, and a folder is a layer: bottom first, as in
# docs/architecture.layers. Link order within a folder is the order here
# (the test and benchmark registries keep it). boot/header.asm links first:
# the multiboot2 header must sit in the first 32 KiB of the image.
BOOT_ASM := boot/header.asm boot/entry.asm
KERNEL_FOLDERS := lib arch console cpu trap boot mm acpi apic smp sched proc bench tests init
lib_c := string.c format.c cmdline.c qr.c deflate.c base64.c
arch_c := extable.c
arch_asm := probe.asm
console_c := kprintf.c console.c early_log.c serial.c fbcon.c font.c
cpu_c := cpu.c cpu_decode.c cpu_quirks.c gdt.c platform.c percpu.c \
	topology.c topology_decode.c cycle_counters.c
trap_c := idt.c trap.c panic.c symbols.c crash.c
trap_asm := isr.asm
boot_c := multiboot2.c boot_modules.c options.c
mm_c := mm.c fault.c kstack.c memmap.c frame_alloc.c pmm.c pagetable.c \
	kmap.c kmap_early.c heap.c tlb.c tlb_trace.c tlb_batch.c tlb_hw.c \
	tlb_options.c tlb_stats.c tlb_global_asid.c
acpi_c := acpi.c tables.c
apic_c := lapic.c xapic.c x2apic.c pic.c ioapic.c tsc.c timer.c
smp_c := call.c call_queue.c
sched_c := fpu.c thread.c sched.c wait.c
sched_asm := switch.asm
proc_c := task.c elf.c uaccess.c syscall.c handle.c endpoint.c ipc.c \
	ipc_fast.c
proc_asm := syscall_entry.asm
bench_c := harness.c results.c summary.c screen.c qr_codes.c tlb_view.c \
	fixture.c cpus.c prim.c reach.c switch.c flush.c crossover.c scale.c \
	revoke.c tlb_flush2.c
tests_c := ktest.c kernel/test_format.c kernel/test_mm.c kernel/test_trap.c \
	kernel/test_boot.c kernel/test_time.c kernel/test_acpi.c kernel/test_smp.c \
	kernel/test_sched.c kernel/test_user.c kernel/test_race.c kernel/test_tlb.c \
	kernel/test_revoke.c kernel/test_pending.c kernel/test_pending_mix.c \
	kernel/test_pending_fail.c kernel/test_fault.c kernel/tlb_oracle.c \
	kernel/tlb_oracle_threads.c kernel/threads.c kernel/test_nmi.c
init_c := main.c smp_boot.c
init_asm := trampoline.asm
KERNEL_C := $(foreach d,$(KERNEL_FOLDERS),$(addprefix $(d)/,$($(d)_c)))
# The injection kernel's own files (INJECT=1): emulations of deliberate bugs
# too large for an INJECTED() check in place, and the records the labs'
# grade reads: of benchmark samples (bench/probe.h) and of how each AP was
# started (apic/startup_probe.h). The default kernel reaches none of their
# functions, so it does not build them.
INJECT_C := mm/tlb_bug_ack.c bench/probe.c apic/startup_probe.c
ifeq ($(INJECT),1)
  KERNEL_C += $(INJECT_C)
endif
KERNEL_ASM := $(foreach d,$(KERNEL_FOLDERS),$(addprefix $(d)/,$($(d)_asm)))

KERNEL_OBJS := $(BOOT_ASM:%.asm=$(BUILD)/%.o) $(KERNEL_ASM:%.asm=$(BUILD)/%.o) \
	$(KERNEL_C:%.c=$(BUILD)/%.o) $(BUILD)/console/font_psf.o

KERNEL_ELF := $(BUILD)/shootdown.elf

# User programs: one .c file each, linked with the runtime in user/lib/.
USER_PROGRAMS := hello spin fault fuzz pingpong threads bench killrace isolate \
	entry replyrace race exhaust
USER_LIB_C := user/lib/syscall.c user/lib/ulib.c
USER_LIB_H := user/lib/syscall.h user/lib/ulib.h
USER_C := $(USER_LIB_C) $(USER_PROGRAMS:%=user/%.c)
USER_LIB_OBJS := $(BUILD)/user/lib/start.o $(BUILD)/user/lib/syscall.o \
	$(BUILD)/user/lib/ulib.o $(BUILD)/user/lib/format.o \
	$(BUILD)/user/lib/string.o
USER_OBJS := $(USER_PROGRAMS:%=$(BUILD)/user/%.o)
USER_ELFS := $(USER_PROGRAMS:%=$(BUILD)/user/%.elf)
ISO := $(BUILD)/shootdown.iso

# A step that fails leaves no half-written file behind to pass for done.
.DELETE_ON_ERROR:

.PHONY: all inject iso run test deps clean format check qemu-gdb help host-tests \
	bench bench-compare compare-linux profile-path plots report import mutants docs \
	lab-tree grade grade-batch break-it timeline usb options-doc figures container \
	container-shell container-run container-grade container-lock

all: $(KERNEL_ELF) $(BUILD)/shootdown.lst $(BUILD)/shootdown.map $(USER_ELFS)

# The injection kernel and its user programs, in a build directory of its
# own so that its objects never mix with the default kernel's.
INJECT_BUILD := $(BUILD)/inject
inject:
	@$(MAKE) --no-print-directory BUILD=$(INJECT_BUILD) INJECT=1 \
		$(INJECT_BUILD)/shootdown.elf $(USER_PROGRAMS:%=$(INJECT_BUILD)/user/%.elf)

iso: $(ISO)

# make usb DEV=/dev/sdX: the ISO onto a USB stick, checked, confirmed and
# verified (tools/run/usb.py); as root, so build the ISO first as yourself.
# Without DEV it prints its usage and builds nothing.
usb: $(if $(strip $(DEV)),$(ISO))
	@YES="$(YES)" $(PYTHON) -m tools.run.usb $(ISO) "$(DEV)"

# --- Kernel ----------------------------------------------------------------
quiet_cmd_cc = CC $<
tools_cc := CC
cmd_cc = $(CC) $(KERNEL_CFLAGS) -c $< -o $@
$(BUILD)/%.o: %.c Makefile
	$(Q)mkdir -p $(@D)
	$(call cmd,cc)

# NASM's own dependency output misses %include files: list them here.
ASM_INCLUDES := arch/consts.inc trap/trap_frame.inc

quiet_cmd_as = AS $<
tools_as := NASM
cmd_as = $(NASM) $(NASM_FLAGS) -MD $(@:.o=.d) -MT $@ $< -o $@
$(BUILD)/%.o: %.asm $(ASM_INCLUDES) Makefile
	$(Q)mkdir -p $(@D)
	$(call cmd,as)

# The console font: drawn as text in console/font.txt, compiled to PSF2 and
# embedded with NASM's incbin (symbols font_psf_start/font_psf_end).
quiet_cmd_mkfont = GEN $@
tools_mkfont := PYTHON
cmd_mkfont = $(PYTHON) -m tools.make.mkfont $< $@
$(BUILD)/console/font.psf: console/font.txt tools/make/mkfont.py
	$(Q)mkdir -p $(@D)
	$(call cmd,mkfont)

quiet_cmd_incbin = GEN $@
cmd_incbin = printf 'section .rodata\nglobal font_psf_start\nglobal font_psf_end\nfont_psf_start: incbin "%s"\nfont_psf_end:\n' $< > $@
$(BUILD)/console/font_psf.asm: $(BUILD)/console/font.psf Makefile
	$(call cmd,incbin)

# Generated assembly (the font, the symbol tables): no %includes.
quiet_cmd_as_gen = AS $<
tools_as_gen := NASM
cmd_as_gen = $(NASM) -f elf64 $< -o $@
$(BUILD)/console/font_psf.o: $(BUILD)/console/font_psf.asm
	$(call cmd,as_gen)

# The kernel is linked twice: the first link gives the addresses of the
# functions, which become the symbol table (section .ksyms, placed last by
# linker.ld so it moves nothing) of the second.
quiet_cmd_mksyms = GEN $@
tools_mksyms := PYTHON
cmd_mksyms = $(PYTHON) -m tools.make.mksyms $(or $(filter %.nm,$^),/dev/null) > $@
$(BUILD)/ksyms.pass1.asm: tools/make/mksyms.py
	$(Q)mkdir -p $(@D)
	$(call cmd,mksyms)

quiet_cmd_ld_kernel = LD $@
tools_ld_kernel := LD
cmd_ld_kernel = $(LD) $(KERNEL_LDFLAGS) -o $@ $(filter %.o,$^)
$(BUILD)/shootdown.pass1.elf: $(KERNEL_OBJS) $(BUILD)/ksyms.pass1.o linker.ld
	$(call cmd,ld_kernel)

quiet_cmd_nm_syms = NM $@
tools_nm_syms := NM
cmd_nm_syms = $(NM) -n --defined-only $< > $@
$(BUILD)/shootdown.pass1.nm: $(BUILD)/shootdown.pass1.elf
	$(call cmd,nm_syms)

$(BUILD)/ksyms.pass2.asm: $(BUILD)/shootdown.pass1.nm tools/make/mksyms.py
	$(call cmd,mksyms)

$(BUILD)/ksyms.%.o: $(BUILD)/ksyms.%.asm
	$(call cmd,as_gen)

# The symbol table must not have moved a function: the second link's text
# symbols are the first's.
quiet_cmd_syms_moved = CHKSYM $@
tools_syms_moved := NM
cmd_syms_moved = $(NM) -n --defined-only $@ | grep -i ' t ' > $@.text-symbols && \
	{ grep -i ' t ' $(BUILD)/shootdown.pass1.nm | cmp -s - $@.text-symbols || \
		{ echo "$@: function addresses moved between links" >&2; exit 1; }; }
$(KERNEL_ELF): $(KERNEL_OBJS) $(BUILD)/ksyms.pass2.o linker.ld \
		$(BUILD)/shootdown.pass1.nm
	$(call cmd,ld_kernel)
	$(call cmd,syms_moved)

quiet_cmd_objdump = OBJDUMP $@
tools_objdump := OBJDUMP
cmd_objdump = $(OBJDUMP) -d -S -M intel $< > $@
$(BUILD)/shootdown.lst: $(KERNEL_ELF)
	$(call cmd,objdump)

quiet_cmd_nm_map = NM $@
tools_nm_map := NM
cmd_nm_map = $(NM) -n -C $< > $@
$(BUILD)/shootdown.map: $(KERNEL_ELF)
	$(call cmd,nm_map)

# The USB-stick image carries the user programs as boot modules too.
quiet_cmd_mkiso = ISO $@
cmd_mkiso = tools/make/mkiso.sh $(USER_ELFS:%=--module %) $@ $(KERNEL_ELF)
$(ISO): $(KERNEL_ELF) $(USER_ELFS) tools/make/mkiso.sh
	$(call cmd,mkiso)

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

quiet_cmd_usercc = USERCC $<
tools_usercc := CC
cmd_usercc = $(CC) $(USER_CFLAGS) -c $< -o $@
$(BUILD)/user/%.o: user/%.c Makefile
	$(Q)mkdir -p $(@D)
	$(call cmd,usercc)

# The kernel's pure formatter and string functions serve user space too.
$(BUILD)/user/lib/format.o: lib/format.c Makefile
	$(Q)mkdir -p $(@D)
	$(call cmd,usercc)

$(BUILD)/user/lib/string.o: lib/string.c Makefile
	$(Q)mkdir -p $(@D)
	$(call cmd,usercc)

quiet_cmd_userld = USERLD $@
tools_userld := LD
cmd_userld = $(LD) $(USER_LDFLAGS) -o $@ $< $(USER_LIB_OBJS)
$(USER_ELFS): $(BUILD)/user/%.elf: $(BUILD)/user/%.o $(USER_LIB_OBJS) \
		user/linker.ld
	$(call cmd,userld)

# --- Running ---------------------------------------------------------------
# Variables for run and test (see docs/running.md): EMU SMP MEM ACCEL CPU FIRMWARE
# MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT TIMEOUT.
RUN_VARS := EMU SMP MEM ACCEL CPU FIRMWARE MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT TIMEOUT
RUN_ENV := $(foreach v,$(RUN_VARS),$(if $(filter-out undefined,$(origin $(v))),$(v)="$($(v))"))

deps:
	@tools/make/deps.sh

# ICOUNT=1 also tells the kernel (option icount) that its TSC counts
# instructions; tools/bench/bench.py does the same for bench and bench-compare.
ICOUNT_ON := $(filter-out 0 no false off,$(ICOUNT))
RUN_CMDLINE := $(if $(ICOUNT_ON),CMDLINE="$(strip $(CMDLINE) icount)")

# The kernel's default job is the benchmark suite (bench/).
run: deps all
	@env $(RUN_ENV) $(RUN_CMDLINE) $(PYTHON) -m tools.run.boot run $(KERNEL_ELF)

qemu-gdb: deps all
	@env $(RUN_ENV) $(PYTHON) -m tools.run.boot gdb $(KERNEL_ELF)

# --- Benchmarks --------------------------------------------------------------
# Results: $(BUILD)/bench/<timestamp>.json. A and B: kernel options, e.g.
# make bench-compare A="pcid=on" B="pcid=off". Plots: $(BUILD)/bench/plots;
# the report: $(BUILD)/bench/report.html. Both draw the newest results, or
# RESULTS=path.json (docs/bench.md, "Report and charts").
bench: deps all
	@env $(RUN_ENV) $(PYTHON) -m tools.bench.bench run $(KERNEL_ELF)

bench-compare: deps all
	@env $(RUN_ENV) $(PYTHON) -m tools.bench.bench compare $(KERNEL_ELF) "$(A)" "$(B)"

# Some rows beside their Linux analogues under Debian's stock kernel
# (linux-image-cloud-amd64, fetched with apt-get into $(BUILD)/linux, not
# installed), in the same QEMU machine: $(BUILD)/compare-linux (docs/bench.md,
# "Against Linux"). COMPARE_SCALE= percent of the samples, as bench_scale=.
LBENCH := $(BUILD)/compare-linux/lbench
quiet_cmd_lbench = HOSTCC $@ (static, for Linux)
tools_lbench := HOSTCC
cmd_lbench = $(HOSTCC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -pthread -o $@ $<
$(LBENCH): tools/bench/linux_bench/lbench.c Makefile
	$(Q)mkdir -p $(@D)
	$(call cmd,lbench)

compare-linux: deps all $(LBENCH)
	@env $(RUN_ENV) $(PYTHON) -m tools.bench.compare_linux $(KERNEL_ELF) $(LBENCH) \
		$(if $(COMPARE_SCALE),--scale $(COMPARE_SCALE))

# Where a path's instructions go, function by function: QEMU single-stepped
# under gdb with icount (docs/bench.md, "Where the instructions go").
# PROFILE_ARGS= the tool's options (python3 -m tools.run.path_profile --help).
profile-path: deps all
	@$(PYTHON) -m tools.run.path_profile $(KERNEL_ELF) $(PROFILE_ARGS)

plots: deps
	@$(PYTHON) -m tools.bench.bench plots --dir $(BUILD)/bench $(RESULTS)

report: deps
	@$(PYTHON) -m tools.bench.bench report --dir $(BUILD)/bench $(RESULTS)

# Results from a machine run elsewhere, as a results JSON in $(BUILD)/bench
# for plots, report and hwcompare: LOG= its serial log, or QR= the screen's
# QR codes (photos, screenshots or their decoded text; files or directories).
import: deps
	$(if $(filter-out 1,$(words $(LOG) $(if $(QR),qr))),$(error make import: give LOG=serial.log or QR="photos..." (one of them)))
	@$(PYTHON) -m tools.bench.bench $(if $(LOG),import $(LOG),import-qr $(QR)) \
		-o $(BUILD)/bench/imported-$(shell date +%Y%m%d-%H%M%S).json

# --- Teacher's figures -----------------------------------------------------------
# labs/teacher/figures/*.svg and .png (tools/labs/figures.py): timelines of
# the simulator's first violation with two ordering mutants, a reference
# race, and two diagrams; FIGURES="cpu-states pairing" draws some.
figures:
	@$(PYTHON) -m tools.labs.figures $(FIGURES)

# --- Timeline ------------------------------------------------------------------
# A picture of the protocol (tools/run/timeline.py, docs/tlb.md): boots a short
# scenario with tlb_trace on (TIMELINE_CMDLINE on SMP=2, unless SMP= or
# CMDLINE= say otherwise; CMDLINE must then hold tlb_trace) and draws its
# trace to $(BUILD)/timeline/timeline.svg and .png. LOG=path draws that
# serial log instead, without booting. TIMELINE_ARGS: the renderer's
# options (--first N, --from T, --to T, --spacing time, --title TEXT).
TIMELINE_CMDLINE := bench=lazy_storm bench_scale=1 tlb_trace console=serial
TIMELINE_ARGS ?= --first 150
TIMELINE_STEM := $(BUILD)/timeline/timeline
TIMELINE_ENV := $(RUN_ENV) $(if $(filter undefined,$(origin SMP)),SMP=2) \
	$(if $(filter undefined,$(origin CMDLINE)),CMDLINE="$(TIMELINE_CMDLINE)")

ifneq ($(LOG),)
timeline:
	$(if $(wildcard $(LOG)),,$(error LOG=$(LOG): no such file; give a serial log, e.g. build/run/serial.log after make run CMDLINE='... tlb_trace'))
	@$(PYTHON) -m tools.run.timeline $(LOG) -o $(TIMELINE_STEM) $(TIMELINE_ARGS)
else
timeline: deps all
	@env $(TIMELINE_ENV) $(PYTHON) -m tools.run.timeline --boot $(KERNEL_ELF) \
		-o $(TIMELINE_STEM) $(TIMELINE_ARGS)
endif

# --- Tests -----------------------------------------------------------------
HOST_TEST_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -I. \
	-fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
HOST_TESTS := format cmdline multiboot2 memmap frame_alloc \
	acpi_tables elf cpu_quirks cpu_topology qr deflate heap early_log \
	crossover
HOST_TEST_BINS := $(HOST_TESTS:%=$(BUILD)/host/test_%)

$(BUILD)/host/test_format: tests/host/test_format.c lib/format.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_cmdline: tests/host/test_cmdline.c lib/cmdline.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_multiboot2: tests/host/test_multiboot2.c boot/multiboot2.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_memmap: tests/host/test_memmap.c mm/memmap.c tests/host/host_test.h
$(BUILD)/host/test_frame_alloc: tests/host/test_frame_alloc.c mm/frame_alloc.c tests/host/host_test.h
$(BUILD)/host/test_acpi_tables: tests/host/test_acpi_tables.c acpi/tables.c tests/host/host_test.h
$(BUILD)/host/test_crossover: tests/host/test_crossover.c bench/crossover.c \
	bench/crossover.h tests/host/host_test.h
$(BUILD)/host/test_early_log: tests/host/test_early_log.c console/early_log.c lib/format.c \
	lib/string.c tests/host/host_test.h
$(BUILD)/host/test_cpu_quirks: tests/host/test_cpu_quirks.c cpu/cpu_decode.c cpu/cpu_quirks.c \
	lib/cmdline.c lib/format.c lib/string.c tests/host/host_test.h
$(BUILD)/host/test_cpu_topology: tests/host/test_cpu_topology.c \
	cpu/topology_decode.c lib/string.c tests/host/host_test.h
# test_elf also checks the real user programs, so they must be built first.
$(BUILD)/host/test_elf: tests/host/test_elf.c proc/elf.c tests/host/host_test.h $(USER_ELFS)
$(BUILD)/host/test_elf: HOST_TEST_CFLAGS += -DUSER_ELF_DIR='"$(BUILD)/user"'
# test_qr and test_deflate include lib/qr.c and lib/deflate.c (to reach
# their static functions): not linked again.
$(BUILD)/host/test_qr: tests/host/test_qr.c lib/qr.c lib/qr.h lib/deflate.c \
	lib/deflate.h lib/base64.c lib/base64.h tests/host/host_test.h
$(BUILD)/host/test_qr: HOST_TEST_INCLUDED := lib/qr.c
$(BUILD)/host/test_deflate: tests/host/test_deflate.c lib/deflate.c \
	lib/deflate.h tests/host/host_test.h
$(BUILD)/host/test_deflate: HOST_TEST_INCLUDED := lib/deflate.c
# test_heap includes mm/heap.c to start each case from an empty heap; the
# simulator's arch/x86.h stands in for CLI and STI (SHOOTDOWN_SIM).
$(BUILD)/host/test_heap: tests/host/test_heap.c mm/heap.c mm/heap.h \
	lib/format.c lib/string.c tests/host/host_test.h \
	tests/host/sim_include/arch/x86.h
$(BUILD)/host/test_heap: HOST_TEST_INCLUDED := mm/heap.c
$(BUILD)/host/test_heap: HOST_TEST_CFLAGS := -Itests/host/sim_include \
	-DSHOOTDOWN_SIM $(HOST_TEST_CFLAGS)

quiet_cmd_hostcc = HOSTCC $@
tools_hostcc := HOSTCC
cmd_hostcc = $(HOSTCC) $(HOST_TEST_CFLAGS) -o $@ \
	$(filter-out $(HOST_TEST_INCLUDED),$(filter %.c,$^))
$(BUILD)/host/test_%:
	$(Q)mkdir -p $(@D)
	$(call cmd,hostcc)

# Host tools the Python host tests run (not KTAP programs themselves):
# qr_tool draws QR codes for tests/qr/test_qr.py to decode.
HOST_TOOLS := $(BUILD)/host/qr_tool
$(BUILD)/host/qr_tool: tests/host/qr_tool.c lib/qr.c lib/qr.h lib/deflate.c \
		lib/deflate.h lib/base64.c lib/base64.h
	$(Q)mkdir -p $(@D)
	$(call cmd,hostcc)

# The TLB protocol on a simulated machine with threads for CPUs
# (docs/tlb-simulator.md). Compiled unchanged with SHOOTDOWN_SIM: mm/tlb.c,
# mm/tlb_trace.c, mm/tlb_batch.c, mm/pagetable.c, mm/fault.c, and mm/mm.c,
# mm/kmap.c, mm/kstack.c (included by tlb_sim_mmfile.c and tlb_sim_kfiles.c,
# which reset their state between runs). INJECT_BUILT=1: the simulator sets
# the tlb_bug= it searches with itself, and builds mm/tlb_bug_ack.c.
# tests/host/sim_include comes first on the include path: its arch/x86.h is
# the simulated CPU's. --wrap puts the simulator in front of mm_get/mm_put,
# to check every reference taken and dropped; of tlb_trace_handling and
# tlb_trace_request, so that -v follows each handler's line with the values
# it compared and each request's with why each CPU was sent it or skipped;
# and of flush_tlb_mm_range and flush_tlb_mms, whose calls bound the loads
# a request's line is about.
TLB_SIM_C := tests/host/test_tlb_sim.c tests/host/tlb_sim_sched.c \
	tests/host/tlb_sim_mmu.c tests/host/tlb_sim_kernel.c \
	tests/host/tlb_sim_oracle.c tests/host/tlb_sim_workload.c \
	tests/host/tlb_sim_policy.c tests/host/tlb_sim_trace.c \
	tests/host/tlb_sim_explain.c tests/host/tlb_sim_search.c tests/host/tlb_sim_memory.c \
	tests/host/tlb_sim_host.c tests/host/tlb_sim_kfiles.c \
	tests/host/tlb_sim_mmfile.c mm/tlb.c mm/tlb_trace.c mm/tlb_bug_ack.c \
	mm/tlb_batch.c mm/pagetable.c \
	mm/fault.c smp/call_queue.c \
	mm/tlb_options.c lib/cmdline.c lib/format.c
TLB_SIM_DEPS := tests/host/tlb_sim.h tests/host/sim_include/arch/x86.h \
	mm/mm.c mm/kmap.c mm/kstack.c mm/tlb.h mm/tlb_cpu.h mm/tlb_stats.h \
	mm/tlb_bug.h mm/tlb_trace.h mm/tlb_global_asid.c mm/tlb_global_asid.h \
	lib/inject.h mm/tlb_options.h mm/tlb_hw.h \
	mm/fault.h mm/tlb_batch.h mm/mm.h mm/pagetable.h arch/layout.h mm/kmap.h \
	mm/kstack.h sync/shared.h sync/spinlock.h sync/cpumask.h smp/call.h \
	smp/call_hw.h smp/call_queue.h boot/options.h trap/trap.h
# The simulator's compiler flags: the host tests' (sanitizers on) unless
# told otherwise. Mutation testing (tools/test/mutants.py) builds each mutant
# with the same warnings, -O2 and no sanitizers: several times faster.
TLB_SIM_CFLAGS ?= $(HOST_TEST_CFLAGS)
TLB_SIM_FLAGS = -Itests/host/sim_include $(TLB_SIM_CFLAGS) \
	-DSHOOTDOWN_SIM -DINJECT_BUILT=1 -DMAX_CPUS=64 -pthread \
	-Wl,--wrap=mm_get,--wrap=mm_put,--wrap=tlb_trace_handling \
	-Wl,--wrap=tlb_trace_request,--wrap=flush_tlb_mm_range \
	-Wl,--wrap=flush_tlb_mms
HOST_TEST_BINS += $(BUILD)/host/tlb_sim

quiet_cmd_hostcc_sim = HOSTCC $@
tools_hostcc_sim := HOSTCC
cmd_hostcc_sim = $(HOSTCC) $(TLB_SIM_FLAGS) -o $@ $(TLB_SIM_C)
$(BUILD)/host/tlb_sim: $(TLB_SIM_C) $(TLB_SIM_DEPS)
	$(Q)mkdir -p $(@D)
	$(call cmd,hostcc_sim)

host-tests: $(HOST_TEST_BINS) $(HOST_TOOLS)

test: deps all inject host-tests $(LBENCH)
	@env $(RUN_ENV) $(PYTHON) -m tools.test.run_tests $(KERNEL_ELF) $(HOST_TEST_BINS)

# Mutation testing of the simulator (docs/tlb-simulator.md): every mistake
# in tests/mutants/ (or those named, MUTANTS="a b") must make a case fail.
# Scratch copies and results: build/mutants/ (tools/test/mutants.py).
mutants:
	@$(PYTHON) -m tools.test.mutants $(MUTANTS)

# --- Labs (labs/README.md, docs/labs.md) ---------------------------------------
# make lab-tree LAB=L3 DEST=dir: a student tree; make grade LAB=L3: the
# lab's checks in this tree, Score: N/M (GRADE_SEED=, GRADE_QUICK=1,
# GRADE_BUG= for teachers; LOG= the serial log of L8's day on hardware;
# FORMAT=gradescope [OUT=results.json] Gradescope's results as well). grade
# installs nothing (no deps): a check whose tools are missing says SKIP.
# make grade-batch LAB=L3 SUBMISSIONS=dir OUT=dir [SEED= JOBS= TIME_LIMIT=]:
# every submission in dir graded, OUT/grades.csv (tools/labs/batch.py).
LAB_NAMES := L0 L1 L2 L3 L4 L5 L6 L7 L8 L9
lab-check-var = $(if $(filter $(LAB),$(LAB_NAMES)),,$(error LAB=$(if $(LAB),$(LAB),(unset)): name a lab, one of $(LAB_NAMES) (labs/README.md)))
GRADE_FORMATS := text gradescope
grade-check-format = $(if $(filter-out $(GRADE_FORMATS),$(FORMAT))$(word 2,$(FORMAT)),$(error FORMAT=$(FORMAT): use FORMAT=gradescope for Gradescope's results.json (OUT=path, default results.json), or leave it out for the text report))

lab-tree:
	$(call lab-check-var)
	$(if $(DEST),,$(error DEST= names the directory to write the lab tree to, e.g. DEST=../my-$(LAB)))
	@$(PYTHON) -m tools.labs.lab_tree $(LAB) $(DEST)

grade:
	$(call lab-check-var)
	$(call grade-check-format)
	@$(PYTHON) -m tools.labs.grade $(LAB) --build $(BUILD) $(if $(LOG),--log $(LOG)) \
		$(if $(FORMAT),--format $(FORMAT)) $(if $(OUT),--out "$(OUT)")

grade-batch:
	$(call lab-check-var)
	@$(PYTHON) -m tools.labs.batch $(LAB) --submissions "$(SUBMISSIONS)" --out "$(OUT)" \
		$(if $(SEED),--seed "$(SEED)") $(if $(JOBS),--jobs "$(JOBS)") \
		$(if $(TIME_LIMIT),--time-limit "$(TIME_LIMIT)")

# make break-it LAB=L3 [WORKLOAD=file]: the lab's "Break it" exercise alone:
# does the workload (labs/breakit/L3.workload in a lab tree) expose its bug?
break-it: $(BUILD)/host/tlb_sim
	$(call lab-check-var)
	@$(PYTHON) -m tools.labs.breakit $(LAB) $(WORKLOAD) --build $(BUILD)

# --- Container (docs/container.md) -------------------------------------------
# The tools image (container/): Debian with every package above at the
# versions of container/packages.lock; the tree is mounted, not copied.
# container/run.sh does the work, so a host without GNU make 4 can call it
# directly. CONTAINER_ENGINE=podman|docker (the first found), BASE= the
# Debian image (debian:bookworm), SNAPSHOT= build from snapshot.debian.org.
container:
	@container/run.sh build

container-shell:
	@container/run.sh shell

container-run: export CONTAINER_CMD := $(value CMD)
container-run:
	$(if $(strip $(value CMD)),,$(error make container-run: give the command, e.g. CMD='make grade LAB=L3'))
	@container/run.sh run "$$CONTAINER_CMD"

# BUILD= given here is the grade's build directory inside as well, and
# LOG= (L8's serial log, a path under the tree) its log.
container-grade:
	$(call lab-check-var)
	@container/run.sh run "make grade LAB=$(LAB)$(if $(filter command line,$(origin BUILD)), BUILD=$(BUILD))$(if $(LOG), LOG='$(LOG)')"

# Rewrite container/packages.lock with the newest packages of BASE.
container-lock:
	@container/run.sh lock

# --- Hygiene ---------------------------------------------------------------
FORMAT_FILES = $(filter %.c %.h,$(sort $(KERNEL_C) $(INJECT_C)) $(wildcard */*.h tests/*/*.h tests/host/*.c)) \
	proc/elf.c $(USER_C) $(USER_LIB_H)

quiet_cmd_format = FORMAT $(words $(FORMAT_FILES)) files in place
tools_format := CLANG_FORMAT
cmd_format = $(CLANG_FORMAT) -i $(FORMAT_FILES)
format:
	$(call cmd,format)

# check: each checker one step (CHECK and what it checks).
quiet_cmd_check_consts = CHECK arch/consts.inc
tools_check_consts := PYTHON
cmd_check_consts = $(PYTHON) -m tools.check.consts
# The layers (docs/architecture.layers) and headers that compile alone.
CHECK_HEADERS = --headers kernel "$(CC) $(KERNEL_CFLAGS)" \
	--headers user "$(CC) $(USER_CFLAGS)" \
	--headers host "$(HOSTCC) -Itests/host/sim_include $(HOST_TEST_CFLAGS) -DSHOOTDOWN_SIM"
quiet_cmd_check_layers = CHECK layers, symbols, headers alone
tools_check_layers := PYTHON
cmd_check_layers = $(PYTHON) -m tools.check.layers --objects $(BUILD) $(CHECK_HEADERS)
quiet_cmd_check_format = CHECK clang-format
tools_check_format := CLANG_FORMAT
cmd_check_format = $(CLANG_FORMAT) --dry-run -Werror $(FORMAT_FILES)
quiet_cmd_cppcheck = CHECK cppcheck
tools_cppcheck := CPPCHECK
cmd_cppcheck = $(CPPCHECK) --quiet --error-exitcode=1 --std=c11 --inline-suppr \
	--enable=warning,performance,portability \
	--suppress=missingIncludeSystem -I. $(sort $(KERNEL_C) $(INJECT_C)) \
	proc/elf.c $(USER_C)
check: $(KERNEL_OBJS)
	$(call cmd,check_consts)
	$(call cmd,check_layers)
	$(call cmd,check_format)
	$(call cmd,cppcheck)

# docs/architecture.dot and .svg, drawn from docs/architecture.layers.
quiet_cmd_docs = GEN docs/architecture.dot docs/architecture.svg
tools_docs := PYTHON
cmd_docs = $(PYTHON) -m tools.check.layers --render
docs:
	$(call cmd,docs)

# docs/options.md's option table, as the kernel's `help` option prints it
# from its registry (one QEMU boot); make test checks the page against it.
options-doc: deps all
	@$(PYTHON) -m tools.check.options_doc --write $(KERNEL_ELF)

quiet_cmd_clean = CLEAN $(BUILD)
cmd_clean = rm -rf $(BUILD)
clean:
	$(call cmd,clean)

help:
	@echo "shootdown targets:"
	@echo "  all       build the kernel (build/shootdown.elf, .lst, .map) and"
	@echo "            the user programs (build/user/*.elf)"
	@echo "  iso       build the bootable hybrid BIOS/UEFI image build/shootdown.iso"
	@echo "  usb       DEV=/dev/sdX: write the image to a USB stick, after checks and a"
	@echo "            question (YES=1: none), and verify it"
	@echo "  run       install what is missing, build, boot in QEMU, run the benchmarks"
	@echo "  bench     the same, and keep the results in build/bench/<timestamp>.json"
	@echo "  bench-compare  two runs, kernel options A=\"...\" and B=\"...\", side by side"
	@echo "  compare-linux  some rows beside Debian's stock Linux in the same QEMU machine,"
	@echo "            with the ratios (build/compare-linux; COMPARE_SCALE=10 a short run)"
	@echo "  profile-path  instructions per function along one IPC round trip (or any path:"
	@echo "            PROFILE_ARGS=\"--bench syscall --at null_syscall\"; --help for more)"
	@echo "  plots     PNG and SVG charts of the newest results (build/bench/plots, gnuplot)"
	@echo "  report    the newest results as one HTML page (build/bench/report.html)"
	@echo "  import    LOG=serial.log or QR=\"photos of the screen's QR codes\": results JSON"
	@echo "  timeline  boot a short scenario with tlb_trace and draw its per-CPU timeline"
	@echo "            (build/timeline/timeline.svg, .png); LOG=serial.log draws that log,"
	@echo "            TIMELINE_ARGS=\"--first N --from T --to T --spacing time\" what is shown"
	@echo "  figures   redraw the teacher's lecture figures (labs/teacher/figures/, gnuplot;"
	@echo "            FIGURES=\"cpu-states pairing\" for some)"
	@echo "  test      host unit tests plus every QEMU/Bochs configuration; ends 'N passed, N failed'"
	@echo "  mutants   mutation testing: each mistake in tests/mutants/ must fail a simulator case"
	@echo "            (MUTANTS=\"a b\" for some); ends 'mutants: K killed, S survived of N'"
	@echo "  lab-tree  LAB=L3 DEST=dir: a student tree for one lab (labs/README.md)"
	@echo "  grade     LAB=L3: the lab's checks in this tree, ends 'Score: N/M'"
	@echo "            (GRADE_SEED=n other seeds, GRADE_QUICK=1 one run each, GRADE_BUG=name,"
	@echo "            FORMAT=gradescope OUT=results.json); installs nothing, SKIPs what it lacks"
	@echo "  grade-batch  LAB=L3 SUBMISSIONS=dir OUT=dir [SEED= JOBS= TIME_LIMIT=]: every"
	@echo "            submission (a tree or a .bundle) graded; OUT/grades.csv, OUT/<name>.log"
	@echo "  break-it  LAB=L3 [WORKLOAD=file]: does the lab's workload expose its bug (labs/L3-shootdown.md)"
	@echo "  deps      install the packages run and test need (apt-get)"
	@echo "  container the same tools in a container image, versions pinned (podman or docker;"
	@echo "            docs/container.md); container-shell enters it with this tree mounted,"
	@echo "            container-run CMD='make test' runs a command in it, container-grade LAB=L3"
	@echo "            grades there, container-lock refreshes container/packages.lock"
	@echo "  options-doc  rewrite docs/options.md's option table from the kernel's registry"
	@echo "  qemu-gdb  boot and wait for gdb on localhost:1234"
	@echo "  format    clang-format the sources in place"
	@echo "  check     format check, cppcheck, asm/C constant agreement, layers, headers alone"
	@echo "  docs      redraw docs/architecture.svg from docs/architecture.layers"
	@echo "  clean     remove build/"
	@echo "variables: EMU SMP MEM ACCEL CPU FIRMWARE MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT TIMEOUT CC LD"
	@echo "           MUTANTS, LOG TIMELINE_ARGS (timeline), RESULTS (plots, report: a results JSON),"
	@echo "           LOG QR (import), DEV YES (usb), COMPARE_SCALE (compare-linux),"
	@echo "           CONTAINER_ENGINE BASE SNAPSHOT CMD (container targets)"
	@echo "build: V=1 prints the commands (default: one line per step), CC=clang LD=ld.lld,"
	@echo "       HOSTCC= for the host tests, BUILD=dir instead of build/"

-include $(KERNEL_OBJS:.o=.d) $(USER_OBJS:.o=.d) $(USER_LIB_OBJS:.o=.d)

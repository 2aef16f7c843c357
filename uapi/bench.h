/* SPDX-License-Identifier: MIT */
/*
 * Between the kernel's benchmarks (bench/switch.c, bench/tlb_flush2.c)
 * and their user side (user/bench.c), which measures what only user mode
 * can: a null system call, a user-to-user IPC round trip, and threads of
 * one address space unmapping their pages (tlb_flush2). Shared by both
 * sides: constants only.
 *
 * The kernel spawns the program with an argument (ARG_* fields below):
 * its role and the CPU to run on, and with endpoint handles
 * (uapi/syscall.h, SYS_HANDLE_SPAWNED): the kernel's in slot
 * UBENCH_HANDLE_KERNEL (for a server: the endpoint to serve, and nothing
 * else happens), and for a client the server's in UBENCH_HANDLE_SERVER.
 * The program calls the kernel's endpoint with UBENCH_HELLO; the reply's
 * words are its orders (UBENCH_WORD_*). It measures, sends its samples to the same endpoint
 * (UBENCH_SAMPLES messages, up to four samples each, in TSC cycles per
 * operation, the clock's own cost already taken off) and ends with
 * UBENCH_DONE (word 0: 0, or why it failed), then exits.
 */
#ifndef UAPI_BENCH_H
#define UAPI_BENCH_H

/* Roles (argument bits 0-3). */
#define UBENCH_ROLE_SYSCALL    1 /* times null system calls */
#define UBENCH_ROLE_CLIENT     2 /* times IPC calls to the server endpoint */
#define UBENCH_ROLE_SERVER     3 /* answers calls until UBENCH_STOP */
#define UBENCH_ROLE_THREADS    4 /* client and server threads in one task */
#define UBENCH_ROLE_TLB_FLUSH2 5 /* threads that map, write, unmap, check */

/* Argument fields. */
#define UBENCH_ARG_ROLE_MASK  0xfUL
#define UBENCH_ARG_CPU_SHIFT  4 /* the CPU to pin to (client's, for THREADS) */
#define UBENCH_ARG_CPU_MASK   0xffUL
#define UBENCH_ARG_PEER_SHIFT 12 /* THREADS: the server thread's CPU */
/* TLB_FLUSH2: how many threads, on CPUs 0 .. n-1 (thread 0 reports). */
#define UBENCH_ARG_THREADS_SHIFT      UBENCH_ARG_PEER_SHIFT
#define UBENCH_TLB_FLUSH2_THREADS_MAX 16

/* Handle slots given at spawn. */
#define UBENCH_HANDLE_KERNEL 0 /* the kernel's endpoint (server: to serve) */
#define UBENCH_HANDLE_SERVER 1 /* CLIENT: the server's endpoint */

/* Labels. */
#define UBENCH_HELLO   1 /* program -> kernel, a call: the orders, please */
#define UBENCH_SAMPLES 2 /* program -> kernel: samples in the words */
#define UBENCH_DONE    3 /* program -> kernel: finished; word 0: status */
#define UBENCH_STOP    4 /* client -> server: no more calls */
#define UBENCH_PING    5 /* client -> server and back */
/* UBENCH_SAMPLES carries how many of its words hold samples here. */
#define UBENCH_SAMPLES_COUNT_SHIFT 8

/* The words of the reply to UBENCH_HELLO. */
#define UBENCH_WORD_MAX_SAMPLES 0 /* stop after this many samples */
#define UBENCH_WORD_MIN_SAMPLES 1 /* take at least this many */
#define UBENCH_WORD_BUDGET	2 /* then stop after this many TSC cycles */
#define UBENCH_WORD_TSC_HZ	3 /* TSC cycles per second */

/* Samples dropped before the measured ones (caches, TLB, predictors). */
#define UBENCH_WARMUP 5

/* Statuses in UBENCH_DONE. */
#define UBENCH_OK	    0
#define UBENCH_FAILED_IPC   1 /* an IPC call failed or came back wrong */
#define UBENCH_FAILED_SETUP 2 /* no endpoint, thread or affinity */
/*
 * TLB_FLUSH2: a page mapped afresh read non-zero (a stale translation);
 * UBENCH_DONE's words 1-3: the address, the value read, the CPU.
 */
#define UBENCH_FAILED_STALE	3
#define UBENCH_WORD_STALE_VA	1
#define UBENCH_WORD_STALE_VALUE 2
#define UBENCH_WORD_STALE_CPU	3

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The kernel's half of a user-mode benchmark row (uapi/bench.h): the
 * benchmark spawns the program `bench` and collects what it measured.
 */
#ifndef BENCH_USER_COLLECT_H
#define BENCH_USER_COLLECT_H

#include "proc/ipc.h"

/*
 * Serves the program's requests on ep until it says it is done: its
 * orders, then its samples into the external row begun (bench.h). Returns
 * its status (uapi/bench.h, UBENCH_OK ...) or a negative IPC error; *done
 * gets its last message, whose words say more about a failure.
 */
long bench_user_collect(struct endpoint *ep, struct ipc_message *done);

#endif

/* SPDX-License-Identifier: MIT */
/* 16550 UART on COM1: polled output, 115200 baud, 8N1. */
#ifndef CONSOLE_SERIAL_H
#define CONSOLE_SERIAL_H

#include "lib/types.h"

/*
 * Probe and program COM1. Returns false when no UART answers (laptops,
 * `-serial none`): serial_putc then does nothing.
 */
bool serial_init(void);
bool serial_present(void);
void serial_putc(char c);

/* Waits (bounded) until the UART has sent every byte, e.g. before power-off. */
void serial_flush(void);

#endif

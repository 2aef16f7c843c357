// SPDX-License-Identifier: MIT
/*
 * COM1 output. Polled, not interrupt driven: console output must work in
 * panic and exception paths with interrupts off, and Bochs only shows clean
 * output when the transmitter is polled.
 */
#include "console/serial.h"
#include "arch/x86.h"

/* 16550 registers, offsets from the base port (PC16550D datasheet). */
#define UART_THR 0 /* transmit holding register (write) */
#define UART_IER 1 /* interrupt enable */
#define UART_DLL 0 /* divisor latch low, when LCR.DLAB = 1 */
#define UART_DLM 1 /* divisor latch high, when LCR.DLAB = 1 */
#define UART_FCR 2 /* FIFO control (write) */
#define UART_LCR 3 /* line control */
#define UART_MCR 4 /* modem control */
#define UART_LSR 5 /* line status */
#define UART_SCR 7 /* scratch register */

#define UART_LCR_8N1	      0x03 /* 8 data bits, no parity, 1 stop bit */
#define UART_LCR_DLAB	      0x80 /* divisor latch access */
#define UART_FCR_ENABLE_CLEAR 0x07 /* enable FIFOs, clear both */
#define UART_MCR_DTR_RTS_OUT2 0x0b
#define UART_LSR_THRE	      0x20 /* transmit holding register empty */
#define UART_LSR_TEMT	      0x40 /* transmitter empty: the last bit is out */

#define UART_CLOCK_DIVISOR_115200 1 /* 1.8432 MHz / 16 / 115200 */

/*
 * How long to wait for the transmitter before dropping a character: a UART
 * that stops answering must not hang the kernel. At 115200 baud a byte takes
 * about 87 us; each LSR read is an I/O access of roughly 1 us on hardware.
 */
#define UART_TX_SPINS 100000

static bool present;

/*
 * A 16550 has a scratch register that holds what is written to it; an
 * absent port reads back 0xff (floating bus) or nothing consistent.
 */
static bool uart_answers(uint16_t port)
{
	static const uint8_t patterns[] = {0x55, 0xaa, 0x00};

	for (size_t i = 0; i < ARRAY_SIZE(patterns); i++) {
		outb(port + UART_SCR, patterns[i]);
		if (inb(port + UART_SCR) != patterns[i])
			return false;
	}
	return inb(port + UART_LSR) != 0xff;
}

bool serial_init(void)
{
	const uint16_t port = COM1_PORT;

	present = uart_answers(port);
	if (!present)
		return false;
	outb(port + UART_IER, 0);
	outb(port + UART_LCR, UART_LCR_DLAB);
	outb(port + UART_DLL, UART_CLOCK_DIVISOR_115200 & 0xff);
	outb(port + UART_DLM, UART_CLOCK_DIVISOR_115200 >> 8);
	outb(port + UART_LCR, UART_LCR_8N1);
	outb(port + UART_FCR, UART_FCR_ENABLE_CLEAR);
	outb(port + UART_MCR, UART_MCR_DTR_RTS_OUT2);
	return true;
}

bool serial_present(void)
{
	return present;
}

static void uart_send(uint8_t byte)
{
	for (int spins = 0; spins < UART_TX_SPINS; spins++) {
		if (inb(COM1_PORT + UART_LSR) & UART_LSR_THRE) {
			outb(COM1_PORT + UART_THR, byte);
			return;
		}
		cpu_relax();
	}
	/* The UART stopped draining: stop using it rather than stall. */
	present = false;
}

void serial_putc(char c)
{
	if (!present)
		return;
	if (c == '\n')
		uart_send('\r');
	uart_send((uint8_t)c);
}

void serial_flush(void)
{
	for (int spins = 0; present && spins < UART_TX_SPINS; spins++) {
		if (inb(COM1_PORT + UART_LSR) & UART_LSR_TEMT)
			return;
		cpu_relax();
	}
}

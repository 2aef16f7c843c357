// SPDX-License-Identifier: MIT
/*
 * Memory and string functions.
 *
 * memcpy and memset use REP MOVSB / REP STOSB (fast on every CPU with ERMSB,
 * fine elsewhere) rather than C loops: an optimising compiler turns such a
 * loop back into a call to memcpy, which here would call itself forever.
 */
#include "lib/string.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;

	/* "memory": the compiler must see the copy as reading and writing. */
	__asm__ volatile("rep movsb"
			 : "+D"(d), "+S"(src), "+c"(n)
			 :
			 : "memory");
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (n == 0 || d <= s || d >= s + n)
		return memcpy(dst, src, n);
	/* Overlap with dst above src: copy backwards, from the last byte. */
	d += n - 1;
	s += n - 1;
	__asm__ volatile("std\n\trep movsb\n\tcld"
			 : "+D"(d), "+S"(s), "+c"(n)
			 :
			 : "memory");
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	void *d = dst;

	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	for (; n; n--, x++, y++) {
		if (*x != *y)
			return *x < *y ? -1 : 1;
	}
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *strstr(const char *haystack, const char *needle)
{
	size_t n = strlen(needle);

	for (; *haystack; haystack++) {
		if (!strncmp(haystack, needle, n))
			return (char *)haystack;
	}
	return n ? NULL : (char *)haystack;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t len = strlen(src);
	size_t n = len < size - 1 ? len : size - 1;

	memcpy(dst, src, n);
	dst[n] = '\0';
	return len;
}

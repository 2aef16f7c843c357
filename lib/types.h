/* SPDX-License-Identifier: MIT */
/*
 * Basic types for a kernel built without host headers (-nostdinc).
 *
 * The typedefs use the compiler's own type macros, so they are the very types
 * a hosted <stdint.h> declares: the pure-logic files that host unit tests
 * compile may see both definitions, and C11 allows an identical typedef twice.
 */
#ifndef LIB_TYPES_H
#define LIB_TYPES_H

typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __builtin_va_list va_list;

#ifndef __cplusplus
#define bool _Bool
#define true 1
#define false 0
#endif

#define NULL ((void *)0)

#define UINT8_MAX  __UINT8_MAX__
#define UINT16_MAX __UINT16_MAX__
#define UINT32_MAX __UINT32_MAX__
#define UINT64_MAX __UINT64_MAX__
#define INT64_MAX  __INT64_MAX__
#define SIZE_MAX   __SIZE_MAX__

#define va_start(ap, last) __builtin_va_start(ap, last)
#define va_arg(ap, type)   __builtin_va_arg(ap, type)
#define va_end(ap)	   __builtin_va_end(ap)
#define va_copy(dst, src)  __builtin_va_copy(dst, src)

#define offsetof(type, member) __builtin_offsetof(type, member)
#define ARRAY_SIZE(a)	       (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)	       (((x) + (a)-1) & ~((__typeof__(x))(a)-1))
#define ALIGN_DOWN(x, a)       ((x) & ~((__typeof__(x))(a)-1))
#define IS_ALIGNED(x, a)       (((x) & ((__typeof__(x))(a)-1)) == 0)
#define MIN(a, b)	       ((a) < (b) ? (a) : (b))
#define MAX(a, b)	       ((a) > (b) ? (a) : (b))

#define __packed	__attribute__((packed))
#define __aligned(n)	__attribute__((aligned(n)))
#define __noreturn	__attribute__((noreturn))
#define __noinline	__attribute__((noinline))
#define __always_inline inline __attribute__((always_inline))
#define __section(s)	__attribute__((section(s)))
#define __used		__attribute__((used))
#define __printf(f, a)	__attribute__((format(printf, f, a)))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define KiB(x) ((uint64_t)(x) << 10)
#define MiB(x) ((uint64_t)(x) << 20)
#define GiB(x) ((uint64_t)(x) << 30)

#endif

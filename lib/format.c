// SPDX-License-Identifier: MIT
#include "lib/format.h"
#include "lib/string.h"

struct spec {
	bool left;     /* '-': pad on the right */
	bool zero;     /* '0': pad numbers with zeros */
	bool plus;     /* '+': sign on positive numbers */
	bool space;    /* ' ': space before positive numbers */
	bool alt;      /* '#': 0x prefix / leading 0 for octal */
	bool pointer;  /* %p: 0x prefix even for 0 */
	int width;     /* -1: none */
	int precision; /* -1: none */
};

struct out {
	format_sink sink;
	void *ctx;
	int count;
};

static void emit(struct out *o, char c)
{
	o->sink(c, o->ctx);
	o->count++;
}

static void emit_repeat(struct out *o, char c, int n)
{
	while (n-- > 0)
		emit(o, c);
}

static void emit_string(struct out *o, const struct spec *sp, const char *s)
{
	int len;

	if (!s)
		s = "(null)";
	len = (int)(sp->precision >= 0 ? strnlen(s, (size_t)sp->precision)
				       : strlen(s));
	if (!sp->left)
		emit_repeat(o, ' ', sp->width - len);
	for (int i = 0; i < len; i++)
		emit(o, s[i]);
	if (sp->left)
		emit_repeat(o, ' ', sp->width - len);
}

/*
 * One integer: sign or prefix, zero padding from the precision or the '0'
 * flag, then the digits, padded to the width on the chosen side.
 */
static void emit_number(struct out *o, const struct spec *sp, uint64_t value,
			bool negative, unsigned base, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char buf[24];
	int len = 0;
	const char *prefix = "";
	int prefix_len, zeros, pad;

	/* C: a zero value with precision 0 prints no digits. */
	if (!(value == 0 && sp->precision == 0)) {
		do {
			buf[len++] = digits[value % base];
			value /= base;
		} while (value);
	}

	if (negative)
		prefix = "-";
	else if (sp->plus)
		prefix = "+";
	else if (sp->space)
		prefix = " ";
	else if (sp->pointer ||
		 (sp->alt && base == 16 && len && !(len == 1 && buf[0] == '0')))
		prefix = upper ? "0X" : "0x";
	else if (sp->alt && base == 8 && sp->precision <= len &&
		 (len == 0 || buf[len - 1] != '0'))
		prefix = "0";
	prefix_len = (int)strlen(prefix);

	zeros = sp->precision > len ? sp->precision - len : 0;
	pad = sp->width - prefix_len - zeros - len;
	if (sp->zero && !sp->left && sp->precision < 0 && pad > 0) {
		zeros += pad;
		pad = 0;
	}

	if (!sp->left)
		emit_repeat(o, ' ', pad);
	for (int i = 0; i < prefix_len; i++)
		emit(o, prefix[i]);
	emit_repeat(o, '0', zeros);
	while (len)
		emit(o, buf[--len]);
	if (sp->left)
		emit_repeat(o, ' ', pad);
}

enum length { LEN_INT, LEN_CHAR, LEN_SHORT, LEN_LONG, LEN_LLONG, LEN_SIZE };

static int parse_int(const char **p)
{
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		if (n < 100000)
			n = n * 10 + (**p - '0');
		(*p)++;
	}
	return n;
}

static uint64_t arg_unsigned(va_list *ap, enum length len)
{
	switch (len) {
	case LEN_CHAR:
		return (unsigned char)va_arg(*ap, unsigned int);
	case LEN_SHORT:
		return (unsigned short)va_arg(*ap, unsigned int);
	case LEN_LONG:
		return va_arg(*ap, unsigned long);
	case LEN_LLONG:
		return va_arg(*ap, unsigned long long);
	case LEN_SIZE:
		return va_arg(*ap, size_t);
	default:
		return va_arg(*ap, unsigned int);
	}
}

static int64_t arg_signed(va_list *ap, enum length len)
{
	switch (len) {
	case LEN_CHAR:
		return (signed char)va_arg(*ap, int);
	case LEN_SHORT:
		return (short)va_arg(*ap, int);
	case LEN_LONG:
		return va_arg(*ap, long);
	case LEN_LLONG:
		return va_arg(*ap, long long);
	case LEN_SIZE:
		return va_arg(*ap, ptrdiff_t);
	default:
		return va_arg(*ap, int);
	}
}

/* Flags, width, precision and length of one conversion; *p is past the '%'. */
static enum length parse_spec(const char **p, struct spec *sp, va_list *ap)
{
	enum length len = LEN_INT;

	*sp = (struct spec){.width = -1, .precision = -1};
	for (;; (*p)++) {
		if (**p == '-')
			sp->left = true;
		else if (**p == '0')
			sp->zero = true;
		else if (**p == '+')
			sp->plus = true;
		else if (**p == ' ')
			sp->space = true;
		else if (**p == '#')
			sp->alt = true;
		else
			break;
	}
	if (**p == '*') {
		sp->width = va_arg(*ap, int);
		if (sp->width < 0) {
			sp->left = true;
			sp->width = -sp->width;
		}
		(*p)++;
	} else {
		sp->width = parse_int(p);
	}
	if (**p == '.') {
		(*p)++;
		if (**p == '*') {
			sp->precision = va_arg(*ap, int);
			(*p)++;
		} else {
			sp->precision = parse_int(p);
		}
		if (sp->precision < 0)
			sp->precision = -1;
	}
	if (**p == 'h') {
		(*p)++;
		len = LEN_SHORT;
		if (**p == 'h') {
			(*p)++;
			len = LEN_CHAR;
		}
	} else if (**p == 'l') {
		(*p)++;
		len = LEN_LONG;
		if (**p == 'l') {
			(*p)++;
			len = LEN_LLONG;
		}
	} else if (**p == 'z' || **p == 't') {
		(*p)++;
		len = LEN_SIZE;
	}
	return len;
}

int format_to(format_sink sink, void *ctx, const char *fmt, va_list ap_in)
{
	struct out o = {sink, ctx, 0};
	struct spec sp;
	va_list ap;

	va_copy(ap, ap_in);
	for (const char *p = fmt; *p; p++) {
		enum length len;
		int64_t sv;

		if (*p != '%') {
			emit(&o, *p);
			continue;
		}
		p++;
		len = parse_spec(&p, &sp, &ap);
		/* C: '+' and ' ' apply to signed conversions only. */
		if (*p != 'd' && *p != 'i')
			sp.plus = sp.space = false;
		switch (*p) {
		case 'd':
		case 'i':
			sv = arg_signed(&ap, len);
			emit_number(&o, &sp,
				    sv < 0 ? -(uint64_t)sv : (uint64_t)sv,
				    sv < 0, 10, false);
			break;
		case 'u':
			emit_number(&o, &sp, arg_unsigned(&ap, len), false, 10,
				    false);
			break;
		case 'x':
		case 'X':
			emit_number(&o, &sp, arg_unsigned(&ap, len), false, 16,
				    *p == 'X');
			break;
		case 'o':
			emit_number(&o, &sp, arg_unsigned(&ap, len), false, 8,
				    false);
			break;
		case 'p':
			sp.pointer = true;
			emit_number(&o, &sp, (uintptr_t)va_arg(ap, void *),
				    false, 16, false);
			break;
		case 's':
			emit_string(&o, &sp, va_arg(ap, const char *));
			break;
		case 'c':
			/* Not through emit_string: '\0' is a character too. */
			if (!sp.left)
				emit_repeat(&o, ' ', sp.width - 1);
			emit(&o, (char)va_arg(ap, int));
			if (sp.left)
				emit_repeat(&o, ' ', sp.width - 1);
			break;
		case '%':
			emit(&o, '%');
			break;
		case '\0':
			/* A lone '%' at the end: print it, stop. */
			emit(&o, '%');
			va_end(ap);
			return o.count;
		default:
			/* Unknown conversion: show it rather than guess. */
			emit(&o, '%');
			emit(&o, *p);
			break;
		}
	}
	va_end(ap);
	return o.count;
}

struct chunk {
	char data[FORMAT_CHUNK];
	size_t used;
	format_write write;
};

static void chunk_sink(char c, void *ctx)
{
	struct chunk *ch = ctx;

	if (ch->used == sizeof(ch->data)) {
		ch->write(ch->data, ch->used);
		ch->used = 0;
	}
	ch->data[ch->used++] = c;
}

int format_chunked(format_write write, const char *fmt, va_list ap)
{
	struct chunk ch;
	int n;

	ch.used = 0;
	ch.write = write;
	n = format_to(chunk_sink, &ch, fmt, ap);
	write(ch.data, ch.used);
	return n;
}

struct buffer {
	char *buf;
	size_t size;
	size_t used;
};

static void buffer_sink(char c, void *ctx)
{
	struct buffer *b = ctx;

	if (b->used + 1 < b->size)
		b->buf[b->used] = c;
	b->used++;
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct buffer b = {buf, size, 0};
	int n = format_to(buffer_sink, &b, fmt, ap);

	if (size)
		buf[b.used < size ? b.used : size - 1] = '\0';
	return n;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

// SPDX-License-Identifier: MIT
#include "boot/boot_modules.h"
#include "lib/string.h"
#include "arch/layout.h"

static const struct boot_info *boot;

void boot_modules_register(const struct boot_info *info)
{
	boot = info;
}

bool boot_module(const char *name, const void **data, size_t *size)
{
	for (size_t i = 0; i < boot->module_count; i++) {
		const struct mb2_module *m = &boot->modules[i];

		if (m->cmdline && !strcmp(m->cmdline, name)) {
			*data = phys_to_virt(m->start);
			*size = (size_t)(m->end - m->start);
			return true;
		}
	}
	return false;
}

size_t boot_module_count(void)
{
	return boot->module_count;
}

const char *boot_module_name(size_t i)
{
	const char *name =
		i < boot->module_count ? boot->modules[i].cmdline : NULL;

	return name ? name : "";
}

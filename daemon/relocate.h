/*
 * relocate.h: where an installed coopd finds its files. The install is
 * relocatable (cmake --install --prefix P, or the tree moved afterwards):
 * the kernels are looked up relative to coopd's own binary, as
 * BINDIR/COOP_KERNEL_REL (../share/coop/kernels from sbin), before the
 * path compiled in, and so are the settings.
 */
#ifndef COOPD_RELOCATE_H
#define COOPD_RELOCATE_H

#include <stddef.h>

/* The installed kernel directory beside this binary, canonical, into out:
 * 0; -1 if there is none (a build tree, or a moved binary alone). */
int paths_installed_kernels(char *out, size_t len);

/* The installed settings beside this binary (BINDIR/COOP_CONFIG_REL,
 * ../etc/coop/coopd.ini from sbin; /etc/coop/coopd.ini from /usr/sbin),
 * canonical: 0; -1 if there is none.
 * coopd reads it when started without --config. */
int paths_installed_config(char *out, size_t len);

#endif /* COOPD_RELOCATE_H */

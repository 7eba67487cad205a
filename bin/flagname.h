/* flagname.h: the names of settings in mgpu-run's messages (flagname.c). */
#ifndef MGPU_RUN_FLAGNAME_H
#define MGPU_RUN_FLAGNAME_H

/* Record that the command line's flag (e.g. "--threads") set the setting of
 * variable var (e.g. "MGPU_NUM_THREADS"). */
void flagname_set(const char *var, const char *flag);

/* msg with each variable whose setting a flag set named as that flag: "VAR=x"
 * as "FLAG x", VAR alone as FLAG. The text lies in a buffer of this file's,
 * valid until the next call. */
const char *flagname_apply(const char *msg);

#endif

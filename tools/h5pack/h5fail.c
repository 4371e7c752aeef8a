/*
 * h5fail.c - the HDF5 library's failures as messages that name the
 * dataset file and the cause.
 *
 * The library calls our handler when one of its API functions fails,
 * while its error stack still describes the failure (the next API call,
 * even a cleanup, clears it). We keep the first failure's innermost
 * description until h5_fail() reports it: that is the cause, later
 * failures are consequences.
 */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "../common/prog.h"
#include "h5merge.h"
#include "h5out_priv.h"

static char h5_first_error[2048];

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data)
{
	char *buf = data;

	(void)n;
	if (!buf[0] && e->desc && e->desc[0])
		snprintf(buf, sizeof(h5_first_error), "%s", e->desc);
	return 0;
}

static herr_t record_error(hid_t stack, void *data)
{
	(void)data;
	if (!h5_first_error[0])
		H5Ewalk2(stack, H5E_WALK_UPWARD, innermost, h5_first_error);
	return 0;
}

/* The reason for the failure: the system's error message when a system
 * call failed (HDF5 embeds it as "error message = '...'"), else the
 * library's innermost description. Forgets it for the next failure. */
static const char *h5_reason(char *buf, size_t n)
{
	const char *m = strstr(h5_first_error, "error message = '");
	const char *end = m ? strchr(m + 17, '\'') : NULL;

	if (end)
		snprintf(buf, n, "%.*s", (int)(end - m - 17), m + 17);
	else if (h5_first_error[0])
		snprintf(buf, n, "%.200s", h5_first_error);
	else
		snprintf(buf, n, "HDF5 library error");
	h5_first_error[0] = '\0';
	return buf;
}

int h5_fail(const h5out *h, const char *what)
{
	char buf[256];

	prog_err("unable to %s in '%s': %s", what, h->name,
		 h5_reason(buf, sizeof(buf)));
	return -1;
}

int h5_oom(const h5out *h)
{
	prog_err("out of memory writing '%s'", h->name);
	return -1;
}

void h5_catch_errors(void)
{
	H5Eset_auto2(H5E_DEFAULT, record_error, NULL);
}

/* The same for a file that is read (h5pack --merge's shards). */
int h5_fail_file(const char *name, const char *what)
{
	char buf[256];

	prog_err("unable to %s '%s': %s", what, name,
		 h5_reason(buf, sizeof(buf)));
	return -1;
}

/*
 * buildid.c - this build's id, its marker in the binary, and the checks
 * of other processes' programs against it.
 */
#include "buildid.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buildid_id.h" /* made by make: MELPIPE_BUILD_ID_HEX, _BYTES */
#include "xio.h"

#define PREFIX_LEN 17u                     /* "MELPIPE-BUILD-ID:" */
#define HEX_LEN (2 * BUILDID_SIZE)
#define MARK_LEN (PREFIX_LEN + HEX_LEN + 1) /* with its NUL */
#define NOTE_TYPE 1u                       /* our notes' one type */
#define PHDRS_MAX 128u                     /* program headers read */
#define NOTES_MAX 4096u                    /* bytes of a note segment */
#define NATIVE_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

_Static_assert(sizeof(MELPIPE_BUILD_ID_HEX) == HEX_LEN + 1,
	       "the build id is 32 hex digits");

/* The marker, in an ELF note of its own, as the linker's build id is:
 * the compiler marks a section named .note* as a note, and the linker
 * puts the notes at the start of the file, listed in the program
 * headers (PT_NOTE), where a check reads a few hundred bytes to find it
 * instead of scanning megabytes. Its desc is the one copy of the marker
 * in the program: the check looks for the prefix through it, so that no
 * other copy lies in the binary for a check of this program to find.
 * Kept by the compiler (used) though only the check reads it. */
struct buildid_note {
	uint32_t namesz, descsz, type;
	char name[8];                     /* "melpipe", NUL, padded to 4 */
	char desc[(MARK_LEN + 3) & ~3u];  /* the marker, padded to 4 */
};

static const struct buildid_note buildid_note
	__attribute__((used, section(".note.melpipe.buildid"), aligned(4))) = {
	.namesz = 8, .descsz = MARK_LEN, .type = NOTE_TYPE,
	.name = "melpipe",
	.desc = "MELPIPE-BUILD-ID:" MELPIPE_BUILD_ID_HEX,
};

static const uint8_t buildid_id[BUILDID_SIZE] = { MELPIPE_BUILD_ID_BYTES };

const uint8_t *buildid_bytes(void)
{
	return buildid_id;
}

const char *buildid_hex(void)
{
	return buildid_note.desc + PREFIX_LEN;
}

const char *buildid_strerror(int err)
{
	switch (err) {
	case 0: return "of this build";
	case BUILDID_E_NONE: return "not a melpipe program";
	case BUILDID_E_OTHER: return "a melpipe program of another build";
	case BUILDID_E_NOTSTAGE: return "of this build but not a stage";
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}

/* Whether p (MARK_LEN bytes) is a whole marker: the prefix, 32 lowercase
 * hex digits, a NUL. */
static int is_marker(const char *p)
{
	if (memcmp(p, buildid_note.desc, PREFIX_LEN) != 0 ||
	    p[MARK_LEN - 1] != '\0')
		return 0;
	for (size_t i = PREFIX_LEN; i < MARK_LEN - 1; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
		      (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

/* The first whole marker in buf[len]: 0 when it is this build's,
 * BUILDID_E_OTHER when another's, BUILDID_E_NONE when there is none. */
static int find_marker(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	while ((size_t)(end - p) >= MARK_LEN &&
	       (p = memmem(p, (size_t)(end - p), buildid_note.desc,
			   PREFIX_LEN)) != NULL &&
	       (size_t)(end - p) >= MARK_LEN) {
		if (is_marker(p))
			return memcmp(p, buildid_note.desc, MARK_LEN) == 0
			       ? 0 : BUILDID_E_OTHER;
		p++;
	}
	return BUILDID_E_NONE;
}

/* Reads len bytes at offset off of fd; the count read (less at the end
 * of the file) or -errno. */
static ssize_t read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* A program of another word size, or a file that is not an ELF program,
 * carries no marker that this build would write. */
int buildid_check_fd(int fd)
{
	ElfW(Phdr) ph[PHDRS_MAX];
	ElfW(Ehdr) eh;
	ssize_t n = read_at(fd, &eh, sizeof(eh), 0);
	size_t nph;

	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != NATIVE_CLASS ||
	    eh.e_phentsize != sizeof(ph[0]))
		return BUILDID_E_NONE;
	nph = eh.e_phnum < PHDRS_MAX ? eh.e_phnum : PHDRS_MAX;
	n = read_at(fd, ph, nph * sizeof(ph[0]), (off_t)eh.e_phoff);
	if (n < 0)
		return (int)n;
	nph = (size_t)n / sizeof(ph[0]);
	for (size_t i = 0; i < nph; i++) {
		char buf[NOTES_MAX];
		int e;

		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > sizeof(buf))
			continue;
		n = read_at(fd, buf, ph[i].p_filesz, (off_t)ph[i].p_offset);
		if (n < 0)
			return (int)n;
		if ((e = find_marker(buf, (size_t)n)) != BUILDID_E_NONE)
			return e;
	}
	return BUILDID_E_NONE;
}

int buildid_check_pid(long pid)
{
	char path[64];
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = buildid_check_fd(fd);
	close(fd);
	return e;
}

/* The file name of the program process pid runs (from its /proc/PID/exe
 * link, less " (deleted)"), or its command name, into name[n]; "?" when
 * neither can be read. */
static void program_name(long pid, char *name, size_t n)
{
	static const char deleted[] = " (deleted)";
	char link[4096], path[64];
	const char *base;
	size_t len;
	ssize_t got;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	got = readlink(path, link, sizeof(link) - 1);
	if (got > 0) {
		link[got] = '\0';
		len = (size_t)got;
		if (len > sizeof(deleted) - 1 &&
		    strcmp(link + len - (sizeof(deleted) - 1), deleted) == 0)
			link[len - (sizeof(deleted) - 1)] = '\0';
		base = strrchr(link, '/');
		base = base ? base + 1 : link;
		len = strlen(base) < n ? strlen(base) : n - 1;
		memcpy(name, base, len);
		name[len] = '\0';
		return;
	}
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	snprintf(name, n, "?");
	f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fgets(name, (int)n, f))
		name[strcspn(name, "\n")] = '\0';
	fclose(f);
}

struct readers_check {
	const char *const *names;
	long pid;  /* the last reader checked: the one that failed */
	unsigned n; /* readers checked */
	int err;   /* why it failed */
};

/* xio_pipe_readers()'s callback: stops at the first reader that is not
 * of this build, or not named as asked. */
static int check_reader(long pid, void *arg)
{
	struct readers_check *c = arg;
	int e = buildid_check_pid(pid);

	c->pid = pid;
	c->n++;
	if (e == 0 && c->names) {
		char name[256];
		size_t i;

		program_name(pid, name, sizeof(name));
		for (i = 0; c->names[i]; i++)
			if (strcmp(name, c->names[i]) == 0)
				break;
		if (c->names[i] == NULL)
			e = BUILDID_E_NOTSTAGE;
	}
	if (e == 0)
		return 0;
	c->err = e;
	return 1;
}

void buildid_pid_name(long pid, char *buf, size_t n)
{
	char name[256];

	program_name(pid, name, sizeof(name));
	snprintf(buf, n, "%s, pid %ld", name, pid);
}

int buildid_pipe_readers(int fd, const char *const names[], char *why,
			 size_t n, long *one)
{
	struct readers_check c = { .names = names };
	char name[256];
	int r = xio_pipe_readers(fd, check_reader, &c);

	if (why == NULL)
		n = 0;
	if (one)
		*one = 0;
	if (r > 0 && c.err == 0) {
		if (n)
			why[0] = '\0';
		if (one && c.n == 1)
			*one = c.pid;
		return 1;
	}
	if (n == 0)
		return 0;
	if (r > 0)
		program_name(c.pid, name, sizeof(name));
	if (r == -EINVAL)
		snprintf(why, n, "not a pipe");
	else if (r < 0)
		snprintf(why, n, "cannot look for the pipe's readers in /proc: "
			 "%s", strerror(-r));
	else if (r == 0)
		snprintf(why, n, "no process reads the pipe");
	else if (c.err > -4096)
		snprintf(why, n, "reader pid %ld (%s): its program cannot be "
			 "read: %s", c.pid, name, strerror(-c.err));
	else
		snprintf(why, n, "reader pid %ld (%s) is %s", c.pid, name,
			 buildid_strerror(c.err));
	return 0;
}

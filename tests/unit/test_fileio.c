/* test_fileio.c — the atomic writer against the attacks a shared directory allows:
 * links planted at temporary names, a link or a FIFO at the target, and the modes
 * of new and existing files; reading only regular files (a FIFO must not block). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/base/fileio.h"

static char dir[] = "/tmp/qwenchat-fileio.XXXXXX";

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The PID of a process that has ended: a killed writer's, for its temporary names. */
static pid_t gone_pid(void)
{
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	assert_true(child > 0);
	waitpid(child, NULL, 0);
	return child;
}

static void assert_content(const char *path, const char *want)
{
	size_t len;
	char *got = fio_read_all(path, 1 << 20, &len);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* Entries of dir other than the ones named (NULL-terminated), counted. */
static int extra_entries(const char *const *known)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int extra = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		bool found = false;
		for (int i = 0; known[i]; i++)
			found = found || !strcmp(known[i], e->d_name);
		extra += !found;
	}
	closedir(d);
	return extra;
}

/* Links planted at every name the old writer would have used (PATH.tmp.PID for the
 * next pids) lead nowhere: the victim keeps its bytes. */
static void test_planted_temp_links(void **state)
{
	(void)state;
	char victim[256], target[256], link[300];
	path_of(victim, sizeof victim, "victim");
	path_of(target, sizeof target, "conv.json");
	put(victim, "precious");
	for (long pid = getpid(); pid < getpid() + 50; pid++) {
		snprintf(link, sizeof link, "%s.tmp.%ld", target, pid);
		assert_int_equal(symlink(victim, link), 0);
	}
	assert_int_equal(fio_write_atomic(target, "new", 3, 0600, 0), 0);
	assert_content(victim, "precious");
	assert_content(target, "new");
	for (long pid = getpid(); pid < getpid() + 50; pid++) {
		snprintf(link, sizeof link, "%s.tmp.%ld", target, pid);
		unlink(link);
	}
	unlink(victim);
	unlink(target);
}

/* A temporary file a killed writer left (its PID gone) goes at the next write of the
 * same file; one of a writer still running stays, and so does a link of that form. */
static void test_stale_temps(void **state)
{
	(void)state;
	char target[256], dead[300], live[300], link[300], user[300];
	path_of(target, sizeof target, "conv2.json");
	pid_t child = gone_pid();
	char name[100];
	snprintf(name, sizeof name, ".conv2.json.tmp.%ld.0123456789abcdef", (long)child);
	path_of(dead, sizeof dead, name);
	snprintf(name, sizeof name, ".conv2.json.tmp.%ld.0123456789abcdef", (long)getpid());
	path_of(live, sizeof live, name);
	snprintf(name, sizeof name, ".conv2.json.tmp.%ld.link", (long)child);
	path_of(link, sizeof link, name);
	/* a file of the user's that only looks like one: its end is no random name */
	snprintf(name, sizeof name, ".conv2.json.tmp.%ld.final", (long)child);
	path_of(user, sizeof user, name);
	put(user, "keep");
	put(dead, "half");
	put(live, "writing");
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(fio_write_atomic(target, "new", 3, 0600, 0), 0);
	struct stat st;
	assert_int_equal(lstat(dead, &st), -1);
	assert_int_equal(lstat(live, &st), 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_int_equal(lstat(user, &st), 0);
	unlink(user);
	unlink(live);
	unlink(link);
	unlink(target);
}

/* A directory of known files is still ours with what a killed writer of one of them
 * left: fio_foreign_entry removes it; a running writer's is someone else's. */
static void test_foreign_stale(void **state)
{
	(void)state;
	char sub[256], known[300], dead[300], live[300], name[100], other[64];
	path_of(sub, sizeof sub, "run");
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(known, sizeof known, "%s/loss.svg", sub);
	put(known, "<svg/>");
	pid_t child = gone_pid();
	snprintf(name, sizeof name, ".loss.svg.tmp.%ld.0123456789abcdef", (long)child);
	snprintf(dead, sizeof dead, "%s/%s", sub, name);
	put(dead, "half");
	const char *ours[] = {"loss.svg"};
	assert_int_equal(fio_foreign_entry(sub, ours, 1, other, sizeof other), 0);
	assert_string_equal(other, "");
	struct stat st;
	assert_int_equal(lstat(dead, &st), -1);
	snprintf(name, sizeof name, ".loss.svg.tmp.%ld.0123456789abcdef", (long)getpid());
	snprintf(live, sizeof live, "%s/%s", sub, name);
	put(live, "writing");
	assert_int_equal(fio_foreign_entry(sub, ours, 1, other, sizeof other), 0);
	assert_string_equal(other, name);
	unlink(live);
	unlink(known);
	rmdir(sub);
}

static void told(void *user, const char *d, const char *name, uint64_t bytes)
{
	(void)d;
	(void)name;
	*(uint64_t *)user += bytes;
}

/* Names up to NAME_MAX are written, in one piece or in parts (fio_replace): the
 * temporary name keeps only the start of a long one, and a killed writer's temporary
 * file of a long name is found and removed too. An abort leaves nothing. */
static void test_long_names(void **state)
{
	(void)state;
	char base[NAME_MAX + 1], target[600], dead[600], name[NAME_MAX + 1];
	memset(base, 'n', NAME_MAX);
	base[NAME_MAX] = '\0';
	path_of(target, sizeof target, base);
	assert_int_equal(fio_write_atomic(target, "whole", 5, 0600, 0), 0);
	assert_content(target, "whole");
	pid_t child = gone_pid();
	snprintf(name, sizeof name, ".%.*s.tmp.%ld.abcdef", NAME_MAX - 40, base, (long)child);
	path_of(dead, sizeof dead, name);
	put(dead, "left");
	struct fio_replace r;
	uint64_t removed = 0;
	int fd = fio_replace_begin(&r, target, 0600, told, &removed);
	assert_true(fd >= 0);
	assert_int_equal(removed, 4);
	assert_int_equal(fio_write_fd(fd, "in ", 3), 0);
	assert_int_equal(fio_write_fd(fd, "parts", 5), 0);
	assert_int_equal(fio_replace_commit(&r), 0);
	assert_content(target, "in parts");
	assert_true(fio_replace_begin(&r, target, 0600, NULL, NULL) >= 0);
	assert_int_equal(fio_write_fd(r.fd, "lost", 4), 0);
	fio_replace_abort(&r);
	assert_content(target, "in parts");
	const char *known[] = {base, NULL};
	assert_int_equal(extra_entries(known), 0);
	assert_int_equal(fio_replace_begin(&r, "/dev/null", 0600, NULL, NULL), -1);
	assert_non_null(strstr(err_msg(), "system's directories"));
	unlink(target);
}

static void test_modes(void **state)
{
	(void)state;
	char p[256];
	struct stat st;
	path_of(p, sizeof p, "private");
	mode_t old = umask(022);
	assert_int_equal(fio_write_atomic(p, "a", 1, 0600, 0), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* an existing file does not lend its mode: what is written is private */
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(fio_write_atomic(p, "b", 1, 0600, 0), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	unlink(p);
	path_of(p, sizeof p, "public");
	assert_int_equal(fio_write_atomic(p, "c", 1, 0666, 0), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644); /* the umask applies to new files */
	unlink(p);
	umask(old);
	const char *none[] = {NULL};
	assert_int_equal(extra_entries(none), 0); /* no temporary file left */
}

/* A link at the target: refused with FIO_NO_LINKS, else replaced by the new file
 * (0600, whatever the mode of the file it pointed to), which stays as it was; a FIFO
 * or a directory there is refused and left alone. */
static void test_target_kinds(void **state)
{
	(void)state;
	char real[256], link[256], fifo[256], sub[256];
	path_of(real, sizeof real, "real.json");
	path_of(link, sizeof link, "link.json");
	put(real, "old");
	assert_int_equal(chmod(real, 0644), 0);
	assert_int_equal(symlink("real.json", link), 0);
	assert_int_equal(fio_write_atomic(link, "x", 1, 0600, FIO_NO_LINKS), -1);
	assert_non_null(strstr(err_msg(), "symbolic link"));
	assert_int_equal(fio_write_atomic(link, "new", 3, 0600, 0), 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_content(link, "new");
	assert_content(real, "old");
	path_of(fifo, sizeof fifo, "fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(fio_write_atomic(fifo, "x", 1, 0600, 0), -1);
	assert_non_null(strstr(err_msg(), "not a regular file"));
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	path_of(sub, sizeof sub, "sub");
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(fio_write_atomic(sub, "x", 1, 0600, 0), -1);
	const char *known[] = {"real.json", "link.json", "fifo", "sub", NULL};
	assert_int_equal(extra_entries(known), 0);
	unlink(real);
	unlink(link);
	unlink(fifo);
	rmdir(sub);
}

/* A dangling link or a loop of links at the target is replaced too: nothing is
 * created where a link points. */
static void test_link_chains(void **state)
{
	(void)state;
	char a[256], b[256], c[256];
	path_of(a, sizeof a, "a");
	path_of(b, sizeof b, "b");
	path_of(c, sizeof c, "c");
	assert_int_equal(symlink("b", a), 0);
	assert_int_equal(symlink("c", b), 0);
	assert_int_equal(fio_write_atomic(a, "end", 3, 0600, 0), 0);
	assert_content(a, "end");
	struct stat st;
	assert_int_equal(lstat(c, &st), -1);  /* nothing at the chain's end */
	assert_int_equal(symlink("b", c), 0); /* b -> c -> b */
	assert_int_equal(fio_write_atomic(b, "x", 1, 0600, 0), 0);
	assert_content(b, "x");
	const char *known[] = {"a", "b", "c", NULL};
	assert_int_equal(extra_entries(known), 0);
	unlink(a);
	unlink(b);
	unlink(c);
}

/* fio_open_file and fio_read_file refuse a FIFO at once (a plain open() waits for a
 * writer forever), a directory and a device; they follow links to a regular file and
 * refuse a file above the size cap before reading it. */
static void test_regular_only(void **state)
{
	(void)state;
	char fifo[256], sub[256], file[256], link[256];
	path_of(fifo, sizeof fifo, "config.json");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10); /* a blocked open would end the test here, failed */
	assert_int_equal(fio_open_file(fifo, "config.json"), -1);
	assert_non_null(strstr(err_msg(), "config.json: not a regular file"));
	assert_null(fio_read_file(fifo, 1 << 20, NULL));
	assert_non_null(strstr(err_msg(), "not a regular file"));
	alarm(0);
	assert_int_equal(fio_open_file("/dev/null", NULL), -1);
	assert_non_null(strstr(err_msg(), "/dev/null: not a regular file"));
	path_of(sub, sizeof sub, "sub");
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_null(fio_read_file(sub, 1 << 20, NULL));
	assert_non_null(strstr(err_msg(), "is a directory"));
	path_of(file, sizeof file, "real.json");
	path_of(link, sizeof link, "link.json");
	put(file, "{\"a\": 1}");
	assert_int_equal(symlink("real.json", link), 0);
	size_t len;
	char *text = fio_read_file(link, 1 << 20, &len);
	assert_non_null(text);
	assert_int_equal(len, 8);
	free(text);
	int fd = fio_open_file(link, NULL);
	assert_true(fd >= 0);
	char c;
	assert_int_equal(read(fd, &c, 1), 1); /* blocking reads again */
	close(fd);
	assert_null(fio_read_file(file, 4, NULL));
	assert_non_null(strstr(err_msg(), "larger than 4 bytes"));
	unlink(fifo);
	unlink(link);
	unlink(file);
	rmdir(sub);
}

/* fio_read_all reads what a user names with --messages or --api-key-file: a pipe
 * whose writer is slow is read to its end, a directory is refused by name. */
static void test_read_all_kinds(void **state)
{
	(void)state;
	char sub[256];
	size_t len = 1;
	char *text;
	alarm(10); /* a blocked read would end the test here, failed */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* the writer: slow, in two parts */
		close(fds[0]);
		usleep(100 * 1000);
		(void)!write(fds[1], "ke", 2);
		usleep(100 * 1000);
		(void)!write(fds[1], "y\n", 2);
		_exit(0);
	}
	close(fds[1]);
	char name[64];
	snprintf(name, sizeof name, "/dev/fd/%d", fds[0]);
	text = fio_read_all(name, 1 << 20, &len);
	alarm(0);
	close(fds[0]);
	waitpid(pid, NULL, 0);
	assert_non_null(text);
	assert_string_equal(text, "key\n");
	free(text);
	path_of(sub, sizeof sub, "sub");
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_null(fio_read_all(sub, 1 << 20, NULL));
	assert_non_null(strstr(err_msg(), "sub: is a directory"));
	rmdir(sub);
}

/* Another user's file at the target lends neither its mode nor set-id bits: the new
 * file is ours and private (as root only: it needs a file of another owner). */
static void test_foreign_mode(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char p[256];
	struct stat st;
	path_of(p, sizeof p, "theirs.json");
	put(p, "theirs");
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(chmod(p, 06777), 0);
	assert_int_equal(fio_write_atomic(p, "ours", 4, 0600, 0), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_content(p, "ours");
	unlink(p);
}

/* The system's directories: names there are written through, never replaced. A
 * descriptor of this process is written as it was opened (one open for reading only
 * is refused); a file of the kernel's is refused. */
static void test_system_names(void **state)
{
	(void)state;
	char p[256], name[64];
	path_of(p, sizeof p, "plain");
	assert_false(fio_in_system_dir(p));
	assert_true(fio_in_system_dir("/dev/null"));
	assert_true(fio_in_system_dir("/proc/self/comm"));
	assert_true(fio_in_system_dir("/dev/fd/1"));
	assert_int_equal(fio_write_atomic("/dev/null", "x", 1, 0600, 0), 0);
	struct stat st;
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(fio_write_atomic("/proc/self/comm", "x", 1, 0600, 0), -1);
	assert_non_null(strstr(err_msg(), "a file of the system's"));
	/* a descriptor open for writing: the bytes land there, at its offset */
	put(p, "");
	int w = open(p, O_WRONLY | O_CLOEXEC);
	assert_true(w >= 0);
	snprintf(name, sizeof name, "/dev/fd/%d", w);
	assert_int_equal(fio_write_atomic(name, "ab", 2, 0600, 0), 0);
	snprintf(name, sizeof name, "/proc/self/fd/%d", w);
	assert_int_equal(fio_write_atomic(name, "cd", 2, 0600, 0), 0);
	close(w);
	assert_content(p, "abcd");
	/* open for reading only: refused, the file unchanged */
	int r = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(r >= 0);
	snprintf(name, sizeof name, "/dev/fd/%d", r);
	assert_int_equal(fio_write_atomic(name, "x", 1, 0600, 0), -1);
	assert_non_null(strstr(err_msg(), "open for reading only"));
	close(r);
	assert_content(p, "abcd");
	unlink(p);
}

/* fio_missing_top(path) is top; what fio_mkdirs(path) makes, fio_rmdirs_upto removes. */
static void made_and_removed(const char *path, const char *top)
{
	char *t = fio_missing_top(path);
	assert_non_null(t);
	assert_string_equal(t, top);
	assert_int_equal(fio_mkdirs(path, 0700), 0);
	fio_rmdirs_upto(path, t);
	assert_int_equal(access(top, F_OK), -1);
	free(t);
}

/* mkdir -p's directories for something that failed: removed up to the outermost one
 * made, and only while empty. */
static void test_missing_top(void **state)
{
	(void)state;
	char out[600], top[600], keep[600];
	path_of(out, sizeof out, "m1/m2/out/");
	path_of(top, sizeof top, "m1");
	assert_null(fio_missing_top(dir)); /* there */
	made_and_removed(out, top);
	/* a parent that holds something else stays, with what it holds */
	char *t = fio_missing_top(out);
	assert_int_equal(fio_mkdirs(out, 0700), 0);
	path_of(keep, sizeof keep, "m1/keep");
	put(keep, "k");
	fio_rmdirs_upto(out, t);
	path_of(out, sizeof out, "m1/m2");
	assert_int_equal(access(out, F_OK), -1);
	assert_content(keep, "k");
	unlink(keep);
	rmdir(top);
	free(t);
	/* a relative name, and a path below an existing directory */
	t = fio_missing_top("no-such-dir-xyz/a");
	assert_string_equal(t, "no-such-dir-xyz");
	free(t);
	path_of(out, sizeof out, "one");
	t = fio_missing_top(out);
	assert_string_equal(t, out);
	free(t);
	/* new/../keep/out makes new and keep/out: an empty keep of the user's stays */
	path_of(keep, sizeof keep, "keep");
	assert_int_equal(mkdir(keep, 0700), 0);
	path_of(out, sizeof out, "new/../keep/out");
	t = fio_missing_top(out);
	assert_string_equal(t, out);
	assert_int_equal(fio_mkdirs(out, 0700), 0);
	fio_rmdirs_upto(out, t);
	assert_int_equal(access(out, F_OK), -1);
	assert_int_equal(access(keep, F_OK), 0);
	free(t);
	rmdir(keep);
	path_of(out, sizeof out, "new");
	rmdir(out);
	/* a relative path: "./" and repeated slashes are no directories, a one-letter
	 * first name is one */
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(dir), 0);
	made_and_removed(".//r/./tok/", "r");
	/* a ".." over directories that are there is judged as any other path */
	assert_int_equal(mkdir("here", 0700), 0);
	assert_int_equal(chdir("here"), 0);
	made_and_removed("../runs/tok", "../runs");
	assert_int_equal(chdir(".."), 0);
	rmdir("here");
	assert_int_equal(chdir(cwd), 0);
}

/* fio_mkdirs_below: the folders below base made, a link among them refused (not
 * followed), one at base followed. */
static void test_mkdirs_below(void **state)
{
	(void)state;
	char base[600], other[600], link[600], made[600];
	path_of(base, sizeof base, "repo");
	path_of(other, sizeof other, "elsewhere");
	assert_int_equal(mkdir(other, 0700), 0);
	int d = fio_mkdirs_below(base, "a//b/c", 0700);
	assert_true(d >= 0);
	close(d);
	path_of(made, sizeof made, "repo/a/b/c");
	assert_int_equal(fio_is_dir(made), 1);
	/* a link below base: refused, named, nothing made where it leads */
	path_of(link, sizeof link, "repo/a/l");
	assert_int_equal(symlink(other, link), 0);
	assert_int_equal(fio_mkdirs_below(base, "a/l/x", 0700), -1);
	assert_non_null(strstr(err_msg(), "repo/a/l: a symbolic link (refused"));
	path_of(made, sizeof made, "elsewhere/x");
	assert_int_equal(access(made, F_OK), -1);
	/* ... a file there is no folder */
	path_of(made, sizeof made, "repo/a/f");
	put(made, "f");
	assert_int_equal(fio_mkdirs_below(base, "a/f", 0700), -1);
	assert_non_null(strstr(err_msg(), "repo/a/f: Not a directory"));
	/* a link at base is the user's: followed */
	path_of(made, sizeof made, "viabase");
	assert_int_equal(symlink(other, made), 0);
	d = fio_mkdirs_below(made, "y", 0700);
	assert_true(d >= 0);
	close(d);
	path_of(made, sizeof made, "elsewhere/y");
	assert_int_equal(fio_is_dir(made), 1);
	rmdir(made);
	path_of(made, sizeof made, "viabase");
	unlink(made);
	path_of(made, sizeof made, "repo/a/f");
	unlink(made);
	unlink(link);
	rmdir(other);
	path_of(made, sizeof made, "repo/a/b/c");
	fio_rmdirs_upto(made, base);
	assert_int_equal(access(base, F_OK), -1);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planted_temp_links), cmocka_unit_test(test_modes),
		cmocka_unit_test(test_target_kinds),       cmocka_unit_test(test_link_chains),
		cmocka_unit_test(test_regular_only),       cmocka_unit_test(test_stale_temps),
		cmocka_unit_test(test_foreign_stale),      cmocka_unit_test(test_foreign_mode),
		cmocka_unit_test(test_system_names),       cmocka_unit_test(test_read_all_kinds),
		cmocka_unit_test(test_long_names),         cmocka_unit_test(test_missing_top),
		cmocka_unit_test(test_mkdirs_below),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}

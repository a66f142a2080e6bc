/* test_proc.c — the memory a training plan may count on inside a container: the
 * headroom of the memory cgroups, v2 and v1, read from made-up cgroup trees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/proc.h"

static char dir[] = "/tmp/qwenchat-proc.XXXXXX";

/* Writes text to dir/rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(path, 0700);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static size_t headroom(const char *self_rel, const char *root_rel, char *why, size_t n)
{
	char self[PATH_MAX], root[PATH_MAX];
	snprintf(self, sizeof self, "%s/%s", dir, self_rel);
	snprintf(root, sizeof root, "%s/%s", dir, root_rel);
	return proc_cgroup_headroom(self, root, why, n);
}

/* cgroup v2: the least headroom of the cgroup and its parents, file pages not counted
 * as held; "max" is no limit. */
static void test_v2(void **state)
{
	(void)state;
	char why[PATH_MAX + 64], want[PATH_MAX + 64];
	put("v2/self", "0::/a/b\n");
	put("v2/fs/cgroup.controllers", "cpu memory\n");
	put("v2/fs/a/b/memory.max", "1000000\n");
	put("v2/fs/a/b/memory.current", "600000\n");
	put("v2/fs/a/b/memory.stat",
	    "anon 400000\nfile 200000\nactive_file 60000\ninactive_file 40000\n");
	put("v2/fs/a/memory.max", "max\n");
	put("v2/fs/a/memory.current", "700000\n");
	assert_int_equal(headroom("v2/self", "v2/fs", why, sizeof why), 500000);
	snprintf(want, sizeof want, "%s/v2/fs/a/b/memory.max", dir);
	assert_string_equal(why, want);
	/* a parent's tighter limit wins */
	put("v2/fs/a/memory.max", "800000\n");
	assert_int_equal(headroom("v2/self", "v2/fs", why, sizeof why), 100000);
	snprintf(want, sizeof want, "%s/v2/fs/a/memory.max", dir);
	assert_string_equal(why, want);
	/* over its limit: nothing to be had */
	put("v2/fs/a/b/memory.current", "2000000\n");
	assert_int_equal(headroom("v2/self", "v2/fs", NULL, 0), 0);
	/* no limit anywhere */
	put("v2/fs/a/memory.max", "max\n");
	put("v2/fs/a/b/memory.max", "max\n");
	assert_true(headroom("v2/self", "v2/fs", NULL, 0) == SIZE_MAX);
}

/* cgroup v1: the memory controller's line and its hierarchy under root/memory; the
 * "no limit" value is a page-rounded 2^63. A path the mount does not show (a cgroup
 * namespace) is read at the mount's top. */
static void test_v1(void **state)
{
	(void)state;
	char why[PATH_MAX + 64], want[PATH_MAX + 64];
	put("v1/self", "9:name=systemd:/\n4:cpuacct,memory:/docker/x\n1:cpu:/\n0::/\n");
	put("v1/fs/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("v1/fs/memory/memory.usage_in_bytes", "5000000\n");
	put("v1/fs/memory/docker/memory.limit_in_bytes", "9223372036854771712\n");
	put("v1/fs/memory/docker/memory.usage_in_bytes", "5000000\n");
	put("v1/fs/memory/docker/x/memory.limit_in_bytes", "4194304\n");
	put("v1/fs/memory/docker/x/memory.usage_in_bytes", "3000000\n");
	put("v1/fs/memory/docker/x/memory.stat",
	    "cache 1\ninactive_file 7\ntotal_active_file 300000\n"
	    "total_inactive_file 700000\n");
	assert_int_equal(headroom("v1/self", "v1/fs", why, sizeof why), 4194304 - 2000000);
	snprintf(want, sizeof want, "%s/v1/fs/memory/docker/x/memory.limit_in_bytes", dir);
	assert_string_equal(why, want);
	put("v1/ns", "4:memory:/elsewhere/y\n");
	put("v1/fs/memory/memory.limit_in_bytes", "1048576\n");
	assert_int_equal(headroom("v1/ns", "v1/fs", NULL, 0), 0);
	put("v1/fs/memory/memory.usage_in_bytes", "48576\n");
	assert_int_equal(headroom("v1/ns", "v1/fs", NULL, 0), 1000000);
	/* "memoryx" is not the memory controller; no memory line: no limit known */
	put("v1/other", "4:memoryx:/docker/x\n1:cpu:/\n");
	assert_true(headroom("v1/other", "v1/fs", NULL, 0) == SIZE_MAX);
	assert_true(headroom("v1/missing", "v1/fs", NULL, 0) == SIZE_MAX);
}

/* This machine's figure is MemAvailable or a cgroup's, and says which. */
static void test_this_machine(void **state)
{
	(void)state;
	char why[PATH_MAX + 64] = "";
	size_t avail = proc_mem_available(why, sizeof why);
	assert_true(avail > 0);
	assert_true(!strcmp(why, "MemAvailable") || strstr(why, " less the cgroup's use"));
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v1),
		cmocka_unit_test(test_this_machine),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	teardown(NULL);
	return rc;
}

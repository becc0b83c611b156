/* A minimal test helper for the library tests: CHECK() records a failure
 * with file and line and carries on; test_done() gives the exit status
 * automake's test driver reads (0 pass, 1 fail, 77 skip). */
#ifndef CHUNKFS_TESTS_TAP_H
#define CHUNKFS_TESTS_TAP_H

#include <stdio.h>
#include <stdlib.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                          \
	do {                                                                 \
		test_checks++;                                               \
		if (!(cond)) {                                               \
			test_failures++;                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                            \
		}                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);          \
		test_checks++;                                               \
		if (_a != _b) {                                              \
			test_failures++;                                     \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);         \
		}                                                            \
	} while (0)

static inline int test_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
	return test_failures ? 1 : 0;
}

#endif

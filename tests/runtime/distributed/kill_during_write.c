/* kill_during_write.c: a test-only LD_PRELOAD library that kills its process
 * (SIGKILL) in the middle of writing a file, so that a test can show what a
 * crash during a save leaves behind. Never linked into Onyx.
 *
 *   ONYX_TEST_KILL_WRITING=TEXT      the file: the first one written (write(2),
 *                                    pwrite(2)) whose path contains TEXT
 *   ONYX_TEST_KILL_AFTER_BYTES=N     once it holds N bytes (default 65536),
 *                                    the process dies, partway through a write
 *
 * Without ONYX_TEST_KILL_WRITING it only passes writes through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The build hides symbols by default; these must replace libc's. */
#define EXPORTED __attribute__((visibility("default")))

static long long g_written = 0; /* bytes written to the file so far */

static int is_target(int fd) {
  const char* text = getenv("ONYX_TEST_KILL_WRITING");
  if (!text || !*text || fd <= 2) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, text) != NULL;
}

static long long limit(void) {
  const char* text = getenv("ONYX_TEST_KILL_AFTER_BYTES");
  long long n = text ? atoll(text) : 65536;
  return n > 0 ? n : 1;
}

/* Bytes of this write that may go to the file before the process dies;
 * `count` when it does not reach the limit. */
static size_t before_death(size_t count) {
  long long room = limit() - g_written;
  return (long long)count < room ? count : (size_t)(room > 0 ? room : 0);
}

static void die(void) {
  static const char line[] = "kill_during_write: SIGKILL while writing the file\n";
  ssize_t ignored = write(2, line, sizeof line - 1);
  (void)ignored;
  raise(SIGKILL);
}

EXPORTED ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (!is_target(fd)) return real(fd, buf, count);
  size_t part = before_death(count);
  if (part == count) {
    ssize_t n = real(fd, buf, count);
    if (n > 0) g_written += n;
    return n;
  }
  if (part > 0) real(fd, buf, part);
  die();
  return -1;
}

static ssize_t positioned(const char* name, int fd, const void* buf, size_t count, off_t offset) {
  ssize_t (*real)(int, const void*, size_t, off_t) =
      (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, name);
  if (!is_target(fd)) return real(fd, buf, count, offset);
  size_t part = before_death(count);
  if (part == count) {
    ssize_t n = real(fd, buf, count, offset);
    if (n > 0) g_written += n;
    return n;
  }
  if (part > 0) real(fd, buf, part, offset);
  die();
  return -1;
}

EXPORTED ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  return positioned("pwrite", fd, buf, count, offset);
}
EXPORTED ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
  return positioned("pwrite64", fd, buf, count, offset);
}

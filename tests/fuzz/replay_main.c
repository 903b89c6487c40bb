/* tests/fuzz/replay_main.c: replays corpus files through a libFuzzer harness without libFuzzer.
 *
 * Owns: the `main` linked with each fuzz_<name>.c for `make test` and `make san`. Arguments are
 * files or directories; a directory contributes its regular files (not recursively), sorted by
 * name so that runs are deterministic. Each input is copied into a heap block of exactly its size
 * so that AddressSanitizer catches over-reads. A crash or sanitizer abort is the failure signal;
 * an unreadable argument also fails (exit 1) so that a misspelt corpus path is not a silent pass.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads `path` fully into a malloc'd block of exactly its size (1 byte for an empty file, which
 * is still passed with size 0). Returns 0, or -1 with errno set. */
static int read_file(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        if (len == cap) {
            uint8_t *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return -1;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return -1;
    }
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        errno = ENOMEM;
        return -1;
    }
    if (len)
        memcpy(exact, buf, len);
    free(buf);
    *data = exact;
    *size = len;
    return 0;
}

static int replay_file(const char *path)
{
    uint8_t *data;
    size_t size;
    if (read_file(path, &data, &size) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Replays every regular file directly inside `dir`, in name order; returns the count or -1. */
static long replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    long rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t plen = strlen(dir) + 1 + strlen(e->d_name) + 1;
        char *path = malloc(plen);
        if (!path) {
            rc = -1;
            break;
        }
        snprintf(path, plen, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **grown = realloc(names, ncap * sizeof(*names));
            if (!grown) {
                free(path);
                rc = -1;
                break;
            }
            names = grown;
            cap = ncap;
        }
        names[n++] = path;
    }
    closedir(d);
    if (rc != 0)
        fprintf(stderr, "replay: %s: out of memory\n", dir);
    else if (n > 0)
        qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        if (rc >= 0) {
            if (replay_file(names[i]) != 0)
                rc = -1;
            else
                rc++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    long total = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            failed = 1;
        } else if (S_ISDIR(st.st_mode)) {
            long n = replay_dir(argv[i]);
            if (n < 0)
                failed = 1;
            else
                total += n;
        } else if (replay_file(argv[i]) != 0) {
            failed = 1;
        } else {
            total++;
        }
    }
    printf("replayed %ld inputs\n", total);
    return failed;
}

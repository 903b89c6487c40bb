/* tests/fuzz/fuzz_io.h: for harnesses whose reader takes a path (kubeconfig, outages CSV,
 * database files): the input written to a private temporary file, removed after the call.
 * Owns: that file; aborts (a harness failure) when it cannot be written. */
#ifndef TESTS_FUZZ_IO_H
#define TESTS_FUZZ_IO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Writes data to a new file in a private directory; path receives its name (cap >= 64). The
 * directory is made once per process and left empty by fuzz_file_drop. */
static inline void fuzz_file(const uint8_t *data, size_t size, const char *name, char *path,
                             size_t cap)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/gangsched-fuzz-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
}

/* Removes the file and what SQLite may leave beside it. */
static inline void fuzz_file_drop(const char *path)
{
    char side[600];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-journal", path);
    unlink(side);
}

#endif

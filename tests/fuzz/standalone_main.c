/* Replays a fuzz target over files without libFuzzer: each argument is a file or a directory
 * (its regular files, in name order). For builds without clang and for ctest: a corpus that
 * once made a target crash must keep passing. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, size = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + size, 1, cap - size, fp)) > 0) {
        size += got;
        if (size == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(fp);
    if (!buf) return 1;
    /* an exact-size copy, so that a read past the input is caught by the sanitizer */
    uint8_t *data = malloc(size ? size : 1);
    if (!data) return 1;
    memcpy(data, buf, size);
    free(buf);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, size_t *files) {
    struct stat st;
    if (stat(path, &st)) {
        fprintf(stderr, "cannot stat %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        ++*files;
        return run_file(path);
    }
    DIR *d = opendir(path);
    if (!d) return 1;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
        sprintf(names[n++], "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!stat(names[i], &st) && S_ISREG(st.st_mode)) {
            ++*files;
            rc |= run_file(names[i]);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    size_t files = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) rc |= run_path(argv[i], &files);
    printf("%s: %zu inputs replayed%s\n", argv[0], files, rc ? ", some unreadable" : "");
    return rc;
}

/* tests/tools/jget.c: prints one value from a JSON document, for the scenario scripts.
 *
 *   jget FILE PATH      PATH is slash-separated: object keys, array indices ("policies/0/name")
 *
 * Numbers print with %.17g (integers without a fraction), strings raw, objects and arrays as
 * compact JSON. Exit 0 when found, 1 when the path does not exist, 2 on usage or parse errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static char *slurp(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0)
            break;
        if (n + 1 == cap) {
            char *b2 = realloc(buf, cap * 2);
            if (!b2) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b2;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = 0;
    if (f != stdin)
        fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: jget FILE PATH\n", stderr);
        return 2;
    }
    char *text = slurp(argv[1]);
    if (!text) {
        fprintf(stderr, "jget: cannot read %s\n", argv[1]);
        return 2;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) {
        fprintf(stderr, "jget: %s is not valid JSON\n", argv[1]);
        return 2;
    }
    char *path = strdup(argv[2]);
    cJSON *cur = root;
    for (char *tok = strtok(path, "/"); tok && cur; tok = strtok(NULL, "/"))
        cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(tok))
                                 : cJSON_GetObjectItemCaseSensitive(cur, tok);
    free(path);
    int rc = 0;
    if (!cur) {
        rc = 1;
    } else if (cJSON_IsString(cur)) {
        puts(cur->valuestring);
    } else if (cJSON_IsNumber(cur)) {
        double v = cur->valuedouble;
        if (v == (double)(long long)v)
            printf("%lld\n", (long long)v);
        else
            printf("%.17g\n", v);
    } else {
        char *s = cJSON_PrintUnformatted(cur);
        puts(s ? s : "");
        free(s);
    }
    cJSON_Delete(root);
    return rc;
}

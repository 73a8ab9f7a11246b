/* The readers behind `parallaxc report`: JSON (whole values and streamed
 * arrays), the run's CSV files and the trace summary, on well-formed and
 * hostile input. Every malformed input is refused with a message naming the
 * place; nothing reads past the buffer (each test hands the reader a copy
 * without a terminating NUL, so ASan would see an overrun). */
#include "csv_read.h"
#include "json_read.h"
#include "svg_chart.h"
#include "trace_summary.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A heap copy of s without its NUL. */
static char *exact(const char *s) {
    size_t n = strlen(s);
    char *p = malloc(n ? n : 1);
    cr_assert_not_null(p);
    memcpy(p, s, n);
    return p;
}

static px_json *parse(const char *s, char *err) {
    char *buf = exact(s);
    px_json *v = px_json_parse(buf, strlen(s), err, 256);
    free(buf);
    return v;
}

Test(report_json, values_and_lookups) {
    char err[256];
    px_json *v = parse(" {\"a\": [1, -2.5e3, true, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\", "
                       "\"o\": {}} ",
                       err);
    cr_assert_not_null(v, "%s", err);
    const px_json *a = px_json_get_kind(v, "a", PX_JSON_ARRAY);
    cr_assert_not_null(a);
    cr_assert_eq(a->n, 4);
    cr_assert_float_eq(a->items[1]->number, -2500, 0);
    cr_assert_eq(a->items[2]->kind, PX_JSON_BOOL);
    cr_assert_eq(a->items[3]->kind, PX_JSON_NULL);
    cr_assert_str_eq(px_json_string_or(v, "s", ""), "x\xc3\xa9\xf0\x9f\x98\x80\n");
    cr_assert_float_eq(px_json_number_or(v, "missing", 7), 7, 0);
    cr_assert_float_eq(px_json_number_or(a, "a", 7), 7, 0); /* not an object */
    cr_assert_not_null(px_json_get_kind(v, "o", PX_JSON_OBJECT));
    px_json_free(v);
}

Test(report_json, lone_surrogates_become_replacement_characters) {
    char err[256];
    px_json *v = parse("[\"\\ud800x\", \"\\udc00\", \"\\ud800\\u0041\"]", err);
    cr_assert_not_null(v, "%s", err);
    cr_assert_str_eq(v->items[0]->string, "\xef\xbf\xbdx");
    cr_assert_str_eq(v->items[1]->string, "\xef\xbf\xbd");
    cr_assert_str_eq(v->items[2]->string, "\xef\xbf\xbd"
                                          "A");
    px_json_free(v);
}

Test(report_json, malformed_input_is_refused_with_its_place) {
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"", "line 1, column 1: expected a value, found the end of the file"},
        {"[1, 2", "expected ',', found the end of the file"},
        {"[1, 2,]", "a trailing comma"},
        {"{\"a\" 1}", "expected ':'"},
        {"{1: 2}", "expected a key string"},
        {"\"abc", "string never closed"},
        {"\"a\\qb\"", "unknown escape"},
        {"\"\\u12\"", "4 hex digits"},
        {"\"a\tb\"", "control character"},
        {"[1] 2", "unexpected '2' after the value"},
        {"-", "expected a value"},
        {"1.2.3", "malformed number"},
        {"tru", "expected a value"},
        {"{\"a\":\n  [1, x]}", "line 2, column 7"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        px_json *v = parse(cases[i].text, err);
        cr_expect_null(v, "accepted: %s", cases[i].text);
        px_json_free(v);
        cr_expect(strstr(err, cases[i].message) != NULL, "'%s': got '%s', expected '%s'",
                  cases[i].text, err, cases[i].message);
    }
}

Test(report_json, nesting_is_bounded) {
    char deep[2 * PX_JSON_MAX_DEPTH + 8], err[256];
    size_t n = 0;
    for (int i = 0; i <= PX_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    for (int i = 0; i <= PX_JSON_MAX_DEPTH; i++) deep[n++] = ']';
    deep[n] = '\0';
    px_json *v = parse(deep, err);
    cr_assert_null(v);
    cr_assert(strstr(err, "nested more than") != NULL, "%s", err);
    deep[n - 1] = '\0';
    memmove(deep, deep + 1, n); /* one level less: accepted */
    v = parse(deep, err);
    cr_assert_not_null(v, "%s", err);
    px_json_free(v);
}

Test(report_json, streamed_array) {
    const char *text = "{\"skip\": {\"x\": [1, {}]}, \"items\": [10, 20, 30]}";
    char *buf = exact(text);
    px_json_reader r;
    px_json_reader_init(&r, buf, strlen(text));
    cr_assert_eq(px_json_enter(&r, '{'), 0);
    double sum = 0;
    char *key;
    int more;
    while ((more = px_json_next(&r, '}', &key)) == 1) {
        if (strcmp(key, "items") == 0) {
            cr_assert_eq(px_json_enter(&r, '['), 0);
            while (px_json_next(&r, ']', NULL) == 1) {
                px_json *v = px_json_read(&r);
                cr_assert_not_null(v, "%s", r.err);
                sum += v->number;
                px_json_free(v);
            }
        } else {
            cr_assert_eq(px_json_skip(&r), 0, "%s", r.err);
        }
        free(key);
    }
    cr_assert_eq(more, 0, "%s", r.err);
    cr_assert_eq(px_json_peek(&r), 0);
    cr_assert_float_eq(sum, 60, 0);
    free(buf);
}

Test(report_csv, rows_columns_and_a_line_still_being_written) {
    const char *text = "step,loss,lr\n1,0.5,0.01\n2,0.25,\n\n3,0.1";
    char *buf = exact(text), err[256];
    px_csv c;
    cr_assert_eq(px_csv_parse(buf, strlen(text), &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n_rows, 2); /* "3,0.1" has no newline yet */
    cr_assert_eq(px_csv_col(&c, "lr"), 2);
    cr_assert_eq(px_csv_col(&c, "accuracy"), -1);
    cr_assert_float_eq(px_csv_at(&c, 1, 1), 0.25, 0);
    cr_assert(isnan(px_csv_at(&c, 1, 2)));
    px_csv_free(&c);
    free(buf);
}

Test(report_csv, malformed_rows_name_the_line) {
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"", "no header line"},
        {"step,loss\n1,2,3\n", "line 2 has 3 cells, the header names 2"},
        {"step,loss\n1,0.5\n2,abc\n", "line 3, column 'loss': 'abc' is not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *buf = exact(cases[i].text), err[256] = "";
        px_csv c;
        cr_expect_eq(px_csv_parse(buf, strlen(cases[i].text), &c, err, sizeof err), -1);
        cr_expect(strstr(err, cases[i].message) != NULL, "got '%s'", err);
        free(buf);
    }
}

Test(report_trace, summary_per_rank_thread_and_span) {
    const char *text =
        "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
        "{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"comm\"}},"
        "\n"
        "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":10,\"dur\":1000,\"name\":\"step\"},\n"
        "{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":500,\"name\":\"step\"},\n"
        "{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":600,\"dur\":1500,\"name\":\"step\"},\n"
        "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":5,\"name\":\"instant\"},\n"
        "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":250,\"name\":\"push\"}]}";
    char *buf = exact(text), err[256];
    px_trace_summary s;
    cr_assert_eq(px_trace_summarize(buf, strlen(text), &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.n_ranks, 2);
    cr_assert_eq(s.n_spans, 4);
    cr_assert_eq(s.ranks[0].pid, 0);
    cr_assert_eq(s.ranks[0].threads[0].spans[0].count, 2);
    cr_assert_float_eq(s.ranks[0].threads[0].spans[0].total_ms, 2.0, 1e-12);
    cr_assert_float_eq(s.ranks[0].last_us - s.ranks[0].first_us, 2100, 1e-9);
    cr_assert_eq(s.ranks[1].n_threads, 2);
    cr_assert_str_eq(s.ranks[1].threads[0].name, "thread 0");
    cr_assert_str_eq(s.ranks[1].threads[1].name, "comm");
    px_trace_summary_free(&s);
    free(buf);
}

Test(report_trace, bad_events_are_refused) {
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"{\"other\": 1}", "no \"traceEvents\" array"},
        {"[{\"ph\":\"X\",\"pid\":0,\"name\":\"a\",\"ts\":1}]", "lacks a numeric pid, tid"},
        {"[{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"a\"}]", "has no numeric ts"},
        {"[{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"a\",\"ts\":1,\"dur\":-2}]", "negative dur"},
        {"[{\"ph\":\"X\",\"pid\":1e30,\"tid\":0,\"name\":\"a\",\"ts\":1}]", "outside 0..1e9"},
        {"[{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"a\",\"ts\":1}", "expected ','"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *buf = exact(cases[i].text), err[256] = "";
        px_trace_summary s;
        cr_expect_eq(px_trace_summarize(buf, strlen(cases[i].text), &s, err, sizeof err), -1);
        cr_expect(strstr(err, cases[i].message) != NULL, "'%s': got '%s'", cases[i].text, err);
        free(buf);
    }
}

Test(report_svg, counts_what_it_draws_and_escapes_labels) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    double x[] = {1, 2, 3, 4}, y[] = {0.5, NAN, 0.25, 0.125};
    px_series s = {"loss <raw> & \"smoothed\"", x, y, 4, 0};
    cr_assert_eq(px_svg_lines(f, "step", PX_UNIT_PLAIN, &s, 1), 3);
    double v[] = {1000, 2000, NAN, 0};
    const char *groups[] = {"rank 0", "rank 1"}, *segments[] = {"sent", "received"};
    px_bars b = {2, 2, groups, segments, v, 1};
    cr_assert_eq(px_svg_bars(f, PX_UNIT_BYTES, &b), 3);
    fclose(f);
    cr_assert(strstr(out, "loss &lt;raw&gt; &amp; &quot;smoothed&quot;") != NULL);
    cr_assert(strstr(out, "<raw>") == NULL);
    char buf[32];
    px_format_value(buf, sizeof buf, 1.5e6, PX_UNIT_BYTES);
    cr_assert_str_eq(buf, "1.5 MB");
    px_format_value(buf, sizeof buf, 2500, PX_UNIT_MS);
    cr_assert_str_eq(buf, "2.5 s");
    free(out);
}

/* The planner charts up to 21 series: each line gets a stroke of its own
 * (a colour, or past the palette a dashed repeat), never a plain repeat. */
Test(report_svg, every_series_has_its_own_stroke) {
    enum { N = 30 };
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    double x[] = {1, 2}, y[N][2];
    px_series s[N];
    for (int i = 0; i < N; i++) {
        y[i][0] = i, y[i][1] = i + 1;
        s[i] = (px_series){"setting", x, y[i], 2, 0};
    }
    cr_assert_eq(px_svg_lines(f, "hosts", PX_UNIT_PLAIN, s, N), 2 * N);
    fclose(f);
    char seen[N][96];
    int n = 0;
    for (const char *p = strstr(out, "<polyline"); p; p = strstr(p + 1, "<polyline")) {
        const char *stroke = strstr(p, "stroke=\""), *end = strstr(p, " points=");
        cr_assert(stroke && end && end > stroke && end - stroke < 96);
        cr_assert(n < N);
        snprintf(seen[n], sizeof seen[n], "%.*s", (int)(end - stroke), stroke);
        for (int j = 0; j < n; j++)
            cr_assert_str_neq(seen[j], seen[n], "series %d and %d drawn alike: %s", j, n, seen[n]);
        n++;
    }
    cr_assert_eq(n, N);
    free(out);
}

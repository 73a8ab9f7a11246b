#include "flags_agree.h"

#include "checkpoint.h"
#include "hash64.h"
#include "px_train.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

enum { TEXT_MAX = 160 };

/* One setting every rank must share: the flag that sets it and its value
 * as text (what the message shows; its hash is what the ranks compare). */
typedef struct setting {
    const char *flag;
    char text[TEXT_MAX];
} setting;

typedef struct settings {
    setting s[64];
    int n;
} settings;

static void add(settings *l, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(settings *l, const char *flag, const char *fmt, ...) {
    if (l->n == (int)(sizeof l->s / sizeof l->s[0])) return;
    setting *s = &l->s[l->n++];
    s->flag = flag;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->text, sizeof s->text, fmt, ap);
    va_end(ap);
}

static const char *or_none(const char *path) {
    return path ? path : "(not given)";
}

static const char *given(const char *path) {
    return path ? "given" : "not given";
}

/* Every flag that changes the numbers, the schedule or the collectives of a
 * rank. Left out: what only rank 0 writes (--losses, --eval-log,
 * --log-every, --run-dir, --partitions-cache: rank 0 reads it and tells the
 * others), where each rank reads files that are compared by
 * content elsewhere (--data, --eval-data's files, --weights), and what is
 * local to a rank (--threads). */
static void list_settings(const px_train_flags *f, const px_program_desc *p, settings *l) {
    add(l, "the program (its variables and batch)", "%016llx/%lld",
        (unsigned long long)px_model_identity(p), (long long)p->batch);
    add(l, "--steps", "%lld", (long long)f->steps);
    add(l, "--epochs", "%lld", (long long)f->epochs);
    if (f->shuffle)
        add(l, "--shuffle", "%llu", (unsigned long long)f->shuffle_seed);
    else
        add(l, "--shuffle", "off");
    if (f->lr_given)
        add(l, "--lr", "%.17g", f->lr);
    else
        add(l, "--lr", "as compiled");
    add(l, "--lr-schedule", "%s", f->lr_schedule ? f->lr_schedule : "constant");
    add(l, "--lr-warmup", "%lld", (long long)f->schedule.warmup);
    add(l, "--clip-grad-norm", "%.17g", f->clip_grad_norm);
    add(l, "--dropout-seed", "%llu", (unsigned long long)f->dropout_seed);
    add(l, "--accumulate", "%lld", (long long)f->accumulate);
    add(l, "--warmup-steps", "%lld", (long long)f->warmup_steps);
    add(l, "--partitions", "%d%s", f->comm.partitions_override,
        f->comm.partitions_search ? " (search)" : "");
    add(l, "--shuffle-buffer", "%lld", (long long)f->shuffle_buffer);
    /* every rank's watchdog opens its report channel together */
    add(l, "--stall-timeout", "%.17g", f->comm.stall_timeout_s);
    add(l, "--ranks-per-node", "%d", f->comm.ranks_per_node);
    add(l, "--no-local-aggregation", "%s", f->comm.local_aggregation ? "not given" : "given");
    add(l, "--no-overlap", "%s", f->comm.prefetch && f->comm.async_push ? "not given" : "given");
    add(l, "--checkpoint", "%s", or_none(f->checkpoint));
    add(l, "--checkpoint-every", "%lld", (long long)f->checkpoint_every);
    add(l, "--resume", "%s", or_none(f->resume));
    add(l, "--save", "%s", or_none(f->save));
    add(l, "--save-external", "%s", f->save_external ? "given" : "not given");
    add(l, "--keep-best", "%s", or_none(f->keep_best));
    add(l, "--save-infer", "%s", or_none(f->save_infer));
    /* --outputs: their names, joined (a hash of them when that is long) */
    char outs[TEXT_MAX] = "";
    size_t used = 0;
    uint64_t h = PX_HASH64_INIT;
    for (int i = 0; i < f->n_outputs; i++) {
        h = px_hash64(px_hash64_u64(h, (uint64_t)i), f->outputs[i], strlen(f->outputs[i]));
        if (used < sizeof outs)
            used += (size_t)snprintf(outs + used, sizeof outs - used, "%s%s", i ? "," : "",
                                     f->outputs[i]);
    }
    if (used >= sizeof outs - 20)
        add(l, "--outputs", "%.100s... (%016llx)", outs, (unsigned long long)h);
    else
        add(l, "--outputs", "%s", f->n_outputs ? outs : "(not given)");
    add(l, "--stats", "%s", given(f->stats));
    add(l, "--trace", "%s", given(f->trace));
    add(l, "--eval-data", "%s", given(f->eval_data));
    add(l, "--eval-every", "%lld", (long long)f->eval_every);
    add(l, "--eval-every-epoch", "%s", f->eval_every_epoch ? "given" : "not given");
    add(l, "--eval-mode", "%s", f->eval_train_mode ? "train" : "eval");
    add(l, "--early-stop", "%lld", (long long)f->early_stop);
    add(l, "--early-stop-metric", "%s", f->metric ? f->metric : "loss");
    add(l, "--eval-metrics", "%s", f->eval_metrics ? f->eval_metrics : "(not given)");
    add(l, "--eval-score", "%s", f->eval_score ? f->eval_score : "(not given)");
    add(l, "--eval-label", "%s", f->eval_label ? f->eval_label : "(not given)");
    add(l, "--dst", "%d", f->dst.kind);
    add(l, "--dst-every", "%lld", (long long)f->dst.every);
    add(l, "--dst-fraction", "%.17g", f->dst.fraction);
    add(l, "--dst-until", "%lld", (long long)f->dst.until);
    /* the relaxed modes: ranks that disagree would exchange different
     * message sizes or a different number of messages */
    add(l, "--wire", "%s", px_wire_format_name(f->comm.wire));
    add(l, "--wire-error-feedback", "%s", f->comm.wire_error_feedback ? "given" : "not given");
    add(l, "--sync-every", "%lld", (long long)f->comm.sync_every);
    add(l, "--local-sgd-after", "%lld", (long long)f->comm.local_sgd_after);
    add(l, "--staleness", "%lld", (long long)f->comm.staleness);
    add(l, "--allow-mode-change", "%s", f->allow_mode_change ? "given" : "not given");
}

static uint64_t hash_text(const char *t) {
    return px_hash64(PX_HASH64_INIT, t, strlen(t));
}

/* Rank 0's text, sent to every rank (8 bytes a broadcast: only when a
 * mismatch is being reported). */
static void rank0_text(const char *mine, char *out) {
    char buf[TEXT_MAX];
    memset(buf, 0, sizeof buf);
    if (px_comm_rank() == 0) snprintf(buf, sizeof buf, "%s", mine);
    for (size_t k = 0; k < sizeof buf; k += 8) {
        uint64_t w;
        memcpy(&w, buf + k, 8);
        w = px_comm_bcast_u64(w);
        memcpy(out + k, &w, 8);
    }
    out[TEXT_MAX - 1] = '\0';
}

int px_train_flags_agree(int parse_rc, const px_train_flags *f, const px_program_desc *p, int argc,
                         char **argv, FILE *err) {
    if (px_comm_size() == 1) return parse_rc;
    int rank = px_comm_rank();
    /* First whether each command line was accepted: a rank whose own was
     * refused says why (only rank 0 prints parse errors otherwise). */
    int r = px_comm_first_mismatch((uint64_t)parse_rc);
    if (r >= 0) {
        if (rank == r) {
            fflush(stdout);
            if (parse_rc == PX_FLAGS_BAD) {
                px_train_flags parsed;
                fprintf(err, "rank %d refuses its command line (rank 0 accepts its own):\n", r);
                (void)px_train_flags_parse(argc, argv, &parsed, err);
                px_train_flags_free(&parsed);
            } else {
                fprintf(err,
                        "error: rank %d's command line %s, rank 0's %s: every rank must be given "
                        "the same flags\n",
                        r, parse_rc == PX_FLAGS_HELP ? "asks for --help" : "is accepted",
                        parse_rc == PX_FLAGS_HELP ? "does not" : "is refused or asks for --help");
            }
        }
        return PX_FLAGS_BAD;
    }
    if (parse_rc != PX_FLAGS_OK) return parse_rc;
    settings l = {.n = 0};
    list_settings(f, p, &l);
    /* One comparison of them all; setting by setting only when it fails. */
    uint64_t all = PX_HASH64_INIT;
    for (int i = 0; i < l.n; i++) all = px_hash64_u64(all, hash_text(l.s[i].text));
    if (px_comm_first_mismatch(all) < 0) return PX_FLAGS_OK;
    for (int i = 0; i < l.n; i++) {
        r = px_comm_first_mismatch(hash_text(l.s[i].text));
        if (r < 0) continue;
        char theirs[TEXT_MAX];
        rank0_text(l.s[i].text, theirs);
        if (rank == r) {
            fflush(stdout);
            fprintf(err,
                    "error: the ranks were given different %s: rank 0 has %s, rank %d has %s. "
                    "Every rank must run with the same value of it (the numbers, the schedule "
                    "and the messages between ranks depend on it); nothing was trained\n",
                    l.s[i].flag, theirs, r, l.s[i].text);
        }
        return PX_FLAGS_BAD;
    }
    return PX_FLAGS_OK; /* the hashes of the list collided: the settings agree */
}

/* The compiler's record of a training program (compile_info.h). */
#include "compile_info.h"

#include "layout_traffic.h"

#include "print.h"
#include "print_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Rank counts the traffic prediction is recorded for: a run on more ranks
 * finds none (its reader says so rather than extrapolating). */
#define MAX_PREDICTED_RANKS 64

static void print_optimizer(FILE *f, const px_train_config *c) {
    fputs("{\"name\": ", f);
    px_print_json_string(f, px_optim_kind_name(c->optimizer));
    fprintf(f,
            ", \"lr\": %.17g, \"momentum\": %.17g, \"nesterov\": %s, \"beta1\": %.17g, "
            "\"beta2\": %.17g, \"epsilon\": %.17g, \"weight_decay\": %.17g, \"alpha\": %.17g}",
            c->lr, c->momentum, c->nesterov ? "true" : "false", c->beta1, c->beta2, c->epsilon,
            c->weight_decay, c->alpha);
}

static void print_names(FILE *f, int n, char *const *names) {
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        px_print_json_string(f, names[i]);
    }
    fputc(']', f);
}

char *px_compile_info_json(const px_cli *cli, const px_train_config *cfg, const px_train_plan *plan,
                           const px_graph *g, px_diag *d) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        px_error(d, "out of memory");
        return NULL;
    }
    fputs("{\"model\": ", f);
    px_print_json_string(f, cli->model);
    fputs(", \"program\": ", f);
    px_print_json_string(f, cli->output);
    fprintf(f, ", \"batch_per_rank\": %" PRId64 ", \"loss\": ", g->batch);
    px_print_json_string(f, plan->loss ? plan->loss->name : NULL);
    fputs(",\n \"optimizer\": ", f);
    print_optimizer(f, cfg);
    fputs(", \"freeze\": ", f);
    print_names(f, cli->n_freeze, cli->freeze);
    fputs(",\n \"comm\": ", f);
    px_print_json_string(f, px_comm_mode_name(cfg->comm));
    fprintf(f, ", \"bucket_bytes\": %" PRId64 ", \"partitions\": ", cfg->bucket_bytes);
    if (cfg->partitions > 0)
        fprintf(f, "%d", cfg->partitions);
    else
        fputs("\"auto\"", f);
    fputs(",\n \"variables\": [", f);
    for (int i = 0; i < plan->n_vars; i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        px_print_variable_json(f, &plan->vars[i]);
    }
    fputs("],\n \"predicted_bytes_per_step\": [", f);
    /* the layout's own prediction, inspect's: with --tp and --pp, the group
     * sums and the stage transfers on top of the data-parallel bytes, the
     * mean over the ranks and (--pp) a rank of each stage's */
    int S = plan->pp > 1 ? plan->pp : 0, n = MAX_PREDICTED_RANKS;
    px_traffic_prediction pred[MAX_PREDICTED_RANKS];
    px_traffic_prediction *by_stage = S ? calloc((size_t)S * n, sizeof *by_stage) : NULL;
    int bad =
        (S && !by_stage) || px_predict_layout_traffic(g, plan, 1, n, cfg, by_stage, pred) != 0;
    for (int r = 1; !bad && r <= n; r++) {
        fprintf(f, "%s\n  {\"ranks\": %d, ", r > 1 ? "," : "", r);
        px_print_bytes_fields(f, &pred[r - 1]);
        for (int s = 0; s < S; s++) {
            fputs(s ? ", {" : ", \"by_stage\": [{", f);
            px_print_bytes_fields(f, &by_stage[(size_t)s * n + r - 1]);
            fputs(s + 1 < S ? "}" : "}]", f);
        }
        fputc('}', f);
    }
    free(by_stage);
    fputs("]}", f);
    bad |= ferror(f);
    if (fclose(f) != 0 || bad) {
        free(buf);
        px_error(d, "out of memory");
        return NULL;
    }
    return buf;
}

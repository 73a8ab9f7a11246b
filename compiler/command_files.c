/* The files `compile` and `inspect` write, checked against the output
 * policy (common/out_paths.h) before any work: each output a regular file,
 * a new one or a character device; no two outputs the same file; no output
 * one of the command's inputs (the model, its external data, parallaxc
 * itself, and for compile the runtime libraries it links). */
#include "command_files.h"

#include "emit.h"
#include "out_paths.h"
#include "weights_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The command's outputs; ONNX output may come with OUT.data (external
 * data). Returns the count. */
static int outputs(const px_cli *cli, px_named_path *out, char *emit_data, char *out_data,
                   size_t cap) {
    int n = 0;
    const char *o = cli->output && strcmp(cli->output, "-") != 0 ? cli->output : NULL;
    if (cli->cmd == PX_CMD_INSPECT) {
        out[n++] = (px_named_path){"-o", o};
        if (o && cli->format == PX_FORMAT_ONNX) {
            snprintf(out_data, cap, "%s.data", o);
            out[n++] = (px_named_path){"-o's external data", out_data};
        }
        return n;
    }
    out[n++] = (px_named_path){"-o", cli->output};
    out[n++] = (px_named_path){"--emit-graph", cli->emit_graph};
    if (cli->emit_graph && cli->emit_format == PX_FORMAT_ONNX) {
        snprintf(emit_data, cap, "%s.data", cli->emit_graph);
        out[n++] = (px_named_path){"--emit-graph's external data", emit_data};
    }
    out[n++] = (px_named_path){"PX_EMIT_LLVM", getenv("PX_EMIT_LLVM")};
    return n;
}

/* The command's inputs, into l. */
static int inputs(const px_cli *cli, px_path_list *l, px_diag *d) {
    char self[4096], err[8800];
    if (px_self_path(self, sizeof self) == 0 && px_path_list_add(l, "parallaxc", self))
        return px_error(d, "out of memory");
    px_wsrc src;
    if (px_wsrc_open(&src, cli->model, err, sizeof err) == 0) {
        int oom = px_wsrc_input_files(&src, "MODEL", l);
        px_wsrc_close(&src);
        if (oom) return px_error(d, "out of memory");
    } else if (px_path_list_add(l, "MODEL", cli->model)) { /* the import will say what is wrong */
        return px_error(d, "out of memory");
    }
    return cli->cmd == PX_CMD_COMPILE ? px_runtime_input_files(l, d) : 0;
}

int px_check_command_files(const px_cli *cli, px_diag *d) {
    px_named_path outs[8];
    char emit_data[4200], out_data[4200], msg[9000];
    int n = outputs(cli, outs, emit_data, out_data, sizeof emit_data);
    /* A folder is left to the command, whose message says what to name
     * (compile: "-o DIR/ is a folder: ... e.g. -o DIR/train", status 1). */
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (!outs[i].path || (stat(outs[i].path, &st) == 0 && S_ISDIR(st.st_mode))) continue;
        if (px_output_kind_ok(outs[i].flag, outs[i].path, msg, sizeof msg))
            return px_error(d, "%s", msg);
    }
    if (px_find_path_collision(outs, n, NULL, msg, sizeof msg)) return px_error(d, "%s", msg);
    px_path_list ins = {0};
    int rc = inputs(cli, &ins, d);
    if (rc == 0 && px_find_input_clash(outs, n, ins.items, ins.n, msg, sizeof msg))
        rc = px_error(d, "%s", msg);
    px_path_list_free(&ins);
    return rc;
}

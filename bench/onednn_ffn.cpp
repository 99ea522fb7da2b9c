// onednn_ffn: the oneDNN FFN peer (see onednn_ffn.h). Written against the oneDNN 2.x API
// (operation descriptors: matmul::desc, eltwise_forward::desc; post_ops::append_eltwise with a
// scale argument), which is what Debian's libdnnl-dev 2.6 ships.
#include "onednn_ffn.h"

#include <cstring>
#include <unordered_map>

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

// User-layout weights (float, PyTorch [out, in] row-major) reordered into the layout and dtype of
// `target` (the matmul's weights [in, out], as oneDNN wants them). Seen as an [in, out] matrix,
// the PyTorch buffer is the transposed layout "ba": element (k, n) at n * in + k.
memory reorder_weights(const float *w, int64_t in, int64_t out, const memory::desc &target, const dnnl::engine &eng,
                       dnnl::stream &s) {
    const memory::desc user_md({in, out}, dt::f32, tag::ba);
    memory user(user_md, eng, const_cast<float *>(w));  // only read by the reorder
    memory packed(target, eng);                        // owned by oneDNN
    dnnl::reorder(user, packed).execute(s, user, packed);
    s.wait();
    return packed;
}

// A [1, n] f32 bias owned by oneDNN (a copy: the caller's buffer may be freed).
memory make_bias(const float *b, int64_t n, const dnnl::engine &eng) {
    memory m(memory::desc({1, n}, dt::f32, tag::ab), eng);
    std::memcpy(m.get_data_handle(), b, static_cast<std::size_t>(n) * sizeof(float));
    return m;
}

}  // namespace

OnednnFfn::OnednnFfn(int64_t M, int64_t d_model, int64_t d_ff, bool bf16, bool tanh_form, bool fused,
                     const float *w1, const float *b1, const float *w2, const float *b2)
    : M_(M),
      d_model_(d_model),
      d_ff_(d_ff),
      fused_(fused),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      has_b1_(b1 != nullptr),
      has_b2_(b2 != nullptr) {
    const dt act = bf16 ? dt::bf16 : dt::f32;
    const dnnl::algorithm alg = tanh_form ? dnnl::algorithm::eltwise_gelu_tanh : dnnl::algorithm::eltwise_gelu_erf;

    const memory::desc h_md({M, d_model}, act, tag::ab);
    const memory::desc a_md({M, d_ff}, act, tag::ab);
    const memory::desc out_md({M, d_model}, act, tag::ab);
    // any: let the matmul choose the weights' layout (blocked / VNNI-packed for bf16).
    const memory::desc w1_any({d_model, d_ff}, act, tag::any);
    const memory::desc w2_any({d_ff, d_model}, act, tag::any);
    const memory::desc b1_md({1, d_ff}, dt::f32, tag::ab);
    const memory::desc b2_md({1, d_model}, dt::f32, tag::ab);

    dnnl::primitive_attr attr1;
    if (fused) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, alg, 0.0f, 0.0f);
        attr1.set_post_ops(ops);
    }
    const dnnl::matmul::desc d1 = has_b1_ ? dnnl::matmul::desc(h_md, w1_any, b1_md, a_md)
                                          : dnnl::matmul::desc(h_md, w1_any, a_md);
    const dnnl::matmul::desc d2 = has_b2_ ? dnnl::matmul::desc(a_md, w2_any, b2_md, out_md)
                                          : dnnl::matmul::desc(a_md, w2_any, out_md);
    const dnnl::matmul::primitive_desc pd1(d1, attr1, engine_);
    const dnnl::matmul::primitive_desc pd2(d2, engine_);
    mm1_ = dnnl::matmul(pd1);
    mm2_ = dnnl::matmul(pd2);
    impl1_ = pd1.impl_info_str();
    impl2_ = pd2.impl_info_str();

    if (!fused) {
        // forward_inference: no workspace. src == dst descriptor, executed in place on a.
        const dnnl::eltwise_forward::desc ed(dnnl::prop_kind::forward_inference, alg, a_md, 0.0f, 0.0f);
        const dnnl::eltwise_forward::primitive_desc epd(ed, engine_);
        gelu_ = dnnl::eltwise_forward(epd);
        impl_gelu_ = epd.impl_info_str();
    }

    // Once: convert (bf16) + reorder the weights, copy the biases, allocate the intermediate.
    w1_ = reorder_weights(w1, d_model, d_ff, pd1.weights_desc(), engine_, stream_);
    w2_ = reorder_weights(w2, d_ff, d_model, pd2.weights_desc(), engine_, stream_);
    if (has_b1_) {
        b1_ = make_bias(b1, d_ff, engine_);
    }
    if (has_b2_) {
        b2_ = make_bias(b2, d_model, engine_);
    }
    a_ = memory(a_md, engine_);
    // src/dst get their handles in run(); DNNL_MEMORY_NONE keeps oneDNN from allocating here.
    src_ = memory(h_md, engine_, DNNL_MEMORY_NONE);
    dst_ = memory(out_md, engine_, DNNL_MEMORY_NONE);
}

void OnednnFfn::run(const void *h, void *out) {
    src_.set_data_handle(const_cast<void *>(h));
    dst_.set_data_handle(out);

    std::unordered_map<int, memory> args1{{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, w1_}, {DNNL_ARG_DST, a_}};
    if (has_b1_) {
        args1.emplace(DNNL_ARG_BIAS, b1_);
    }
    mm1_.execute(stream_, args1);
    if (!fused_) {
        gelu_.execute(stream_, {{DNNL_ARG_SRC, a_}, {DNNL_ARG_DST, a_}});
    }
    std::unordered_map<int, memory> args2{{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, w2_}, {DNNL_ARG_DST, dst_}};
    if (has_b2_) {
        args2.emplace(DNNL_ARG_BIAS, b2_);
    }
    mm2_.execute(stream_, args2);
    stream_.wait();
}

std::string OnednnFfn::impl_info() const {
    return fused_ ? impl1_ + "+" + impl2_ : impl1_ + "+" + impl_gelu_ + "+" + impl2_;
}

double OnednnFfn::flops() const {
    return 2.0 * 2.0 * static_cast<double>(M_) * static_cast<double>(d_model_) * static_cast<double>(d_ff_);
}

std::string onednn_version_string() {
    const dnnl_version_t *v = dnnl_version();
    std::string s = "oneDNN v" + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                    std::to_string(v->patch);
    if (v->hash != nullptr && v->hash[0] != '\0') {
        s += std::string(" (commit ") + v->hash + ")";
    }
    switch (v->cpu_runtime) {
    case DNNL_RUNTIME_OMP:
        s += ", cpu_runtime=OpenMP";
        break;
    case DNNL_RUNTIME_TBB:
        s += ", cpu_runtime=TBB";
        break;
    case DNNL_RUNTIME_SEQ:
        s += ", cpu_runtime=sequential";
        break;
    case DNNL_RUNTIME_THREADPOOL:
        s += ", cpu_runtime=threadpool";
        break;
    default:
        s += ", cpu_runtime=" + std::to_string(v->cpu_runtime);
        break;
    }
    const char *isa = "unknown";
    switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::all: isa = "all"; break;
    case dnnl::cpu_isa::sse41: isa = "sse41"; break;
    case dnnl::cpu_isa::avx: isa = "avx"; break;
    case dnnl::cpu_isa::avx2: isa = "avx2"; break;
    case dnnl::cpu_isa::avx512_mic: isa = "avx512_mic"; break;
    case dnnl::cpu_isa::avx512_mic_4ops: isa = "avx512_mic_4ops"; break;
    case dnnl::cpu_isa::avx512_core: isa = "avx512_core"; break;
    case dnnl::cpu_isa::avx512_core_vnni: isa = "avx512_core_vnni"; break;
    case dnnl::cpu_isa::avx512_core_bf16: isa = "avx512_core_bf16"; break;
    case dnnl::cpu_isa::avx512_core_amx: isa = "avx512_core_amx"; break;
    case dnnl::cpu_isa::avx2_vnni: isa = "avx2_vnni"; break;
    }
    return s + ", effective_isa=" + isa;
}

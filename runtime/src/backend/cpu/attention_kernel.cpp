// Fused attention: softmax(q kᵀ · scale) v computed block by block with an
// online softmax (FlashAttention's recurrence), so that no [Sq, Sk] score
// matrix is ever held: memory is linear in the sequence length. The
// backward pass recomputes score blocks from the saved log-sum-exp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/fast_math.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd.h"

namespace loupe::rt::backend::cpu {

namespace {

constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Scores of query rows [i0, i0+bq) against keys [j0, j0+bk), scaled and
// masked, into s (bq x bk).
void scores(const exec::AttentionKernel& k, const float* q, const float* kk, int64_t i0, int64_t bq, int64_t j0,
            int64_t bk, float* s) {
  blas().sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(k.d), k.scale, q + i0 * k.d, int(k.d),
               kk + j0 * k.d, int(k.d), 0.0f, s, int(bk));
  if (!k.causal) return;
  const int64_t off = k.sk - k.sq;  // the last query sees the last key
  for (int64_t i = 0; i < bq; ++i) {
    int64_t first_masked = i0 + i + off + 1 - j0;
    for (int64_t j = std::max<int64_t>(first_masked, 0); j < bk; ++j) s[i * bk + j] = kNegInf;
  }
}

// The key range a query block sees (all of it unless causal).
int64_t key_end(const exec::AttentionKernel& k, int64_t i1) {
  if (!k.causal) return k.sk;
  return std::clamp<int64_t>(i1 + (k.sk - k.sq), 0, k.sk);
}

}  // namespace

LOUPE_SIMD_CLONES void run_attention(const exec::AttentionKernel& k, const std::vector<void*>& buffers) {
  const size_t isz = itemsize(k.dtype);
  std::vector<float> s(size_t(kBlockQ * kBlockK)), acc(size_t(kBlockQ * k.dv)), m(kBlockQ), l(kBlockQ);
  std::vector<float> out(size_t(k.sq * k.dv));
  for (int64_t b = 0; b < k.batch; ++b) {
    F32View q(k.dtype, static_cast<const char*>(buffers[0]) + size_t(b * k.sq * k.d) * isz, k.sq * k.d);
    F32View kk(k.dtype, static_cast<const char*>(buffers[1]) + size_t(b * k.sk * k.d) * isz, k.sk * k.d);
    F32View v(k.dtype, static_cast<const char*>(buffers[2]) + size_t(b * k.sk * k.dv) * isz, k.sk * k.dv);
    for (int64_t i0 = 0; i0 < k.sq; i0 += kBlockQ) {
      const int64_t bq = std::min(kBlockQ, k.sq - i0);
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int64_t kend = key_end(k, i0 + bq);
      for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
        const int64_t bk = std::min(kBlockK, kend - j0);
        scores(k, q.data(), kk.data(), i0, bq, j0, bk, s.data());
        for (int64_t i = 0; i < bq; ++i) {
          float* row = s.data() + i * bk;
          float mx = m[size_t(i)];
          for (int64_t j = 0; j < bk; ++j) mx = std::max(mx, row[j]);
          if (mx == kNegInf) {  // everything masked so far
            for (int64_t j = 0; j < bk; ++j) row[j] = 0.0f;
            continue;
          }
          float corr = fast_exp(m[size_t(i)] - mx);
          float sum = 0;
          for (int64_t j = 0; j < bk; ++j) {
            row[j] = fast_exp(row[j] - mx);
            sum += row[j];
          }
          l[size_t(i)] = l[size_t(i)] * corr + sum;
          m[size_t(i)] = mx;
          float* a = acc.data() + i * k.dv;
          for (int64_t j = 0; j < k.dv; ++j) a[j] *= corr;
        }
        // acc += P V
        blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(k.dv), int(bk), 1.0f, s.data(), int(bk),
                     v.data() + j0 * k.dv, int(k.dv), 1.0f, acc.data(), int(k.dv));
      }
      for (int64_t i = 0; i < bq; ++i) {
        float inv = l[size_t(i)] > 0 ? 1.0f / l[size_t(i)] : 0.0f;
        for (int64_t j = 0; j < k.dv; ++j) out[size_t((i0 + i) * k.dv + j)] = acc[size_t(i * k.dv + j)] * inv;
      }
    }
    from_f32(k.dtype, out.data(), k.sq * k.dv, static_cast<char*>(buffers[3]) + size_t(b * k.sq * k.dv) * isz);
  }
}

LOUPE_SIMD_CLONES void run_attention_bwd(const exec::AttentionBwdKernel& kb, const std::vector<void*>& buffers) {
  const exec::AttentionKernel& k = kb.fwd;
  const size_t isz = itemsize(k.dtype);
  const int64_t nq = k.sq * k.d, nk = k.sk * k.d, nv = k.sk * k.dv, no = k.sq * k.dv;
  std::vector<float> s(size_t(kBlockQ * kBlockK)), dp(size_t(kBlockQ * kBlockK));
  std::vector<float> lse(size_t(k.sq)), dvec(size_t(k.sq));
  std::vector<float> dq(static_cast<size_t>(nq)), dk(static_cast<size_t>(nk)), dv(static_cast<size_t>(nv));
  char* packed = static_cast<char*>(buffers[5]);
  for (int64_t b = 0; b < k.batch; ++b) {
    F32View q(k.dtype, static_cast<const char*>(buffers[0]) + size_t(b * nq) * isz, nq);
    F32View kk(k.dtype, static_cast<const char*>(buffers[1]) + size_t(b * nk) * isz, nk);
    F32View v(k.dtype, static_cast<const char*>(buffers[2]) + size_t(b * nv) * isz, nv);
    F32View o(k.dtype, static_cast<const char*>(buffers[3]) + size_t(b * no) * isz, no);
    F32View d_o(k.dtype, static_cast<const char*>(buffers[4]) + size_t(b * no) * isz, no);
    std::fill(dq.begin(), dq.end(), 0.0f);
    std::fill(dk.begin(), dk.end(), 0.0f);
    std::fill(dv.begin(), dv.end(), 0.0f);
    // Per query row: log-sum-exp of its scores, and D = dO · O.
    for (int64_t i0 = 0; i0 < k.sq; i0 += kBlockQ) {
      const int64_t bq = std::min(kBlockQ, k.sq - i0);
      std::vector<float> m(size_t(bq), kNegInf), l(size_t(bq), 0.0f);
      const int64_t kend = key_end(k, i0 + bq);
      for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
        const int64_t bk = std::min(kBlockK, kend - j0);
        scores(k, q.data(), kk.data(), i0, bq, j0, bk, s.data());
        for (int64_t i = 0; i < bq; ++i) {
          const float* row = s.data() + i * bk;
          float mx = m[size_t(i)];
          for (int64_t j = 0; j < bk; ++j) mx = std::max(mx, row[j]);
          if (mx == kNegInf) continue;
          float sum = 0;
          for (int64_t j = 0; j < bk; ++j) sum += fast_exp(row[j] - mx);
          l[size_t(i)] = l[size_t(i)] * fast_exp(m[size_t(i)] - mx) + sum;
          m[size_t(i)] = mx;
        }
      }
      for (int64_t i = 0; i < bq; ++i) {
        lse[size_t(i0 + i)] =
            l[size_t(i)] > 0 ? m[size_t(i)] + std::log(l[size_t(i)]) : std::numeric_limits<float>::infinity();
        float dsum = 0;
        for (int64_t j = 0; j < k.dv; ++j) dsum += d_o.data()[(i0 + i) * k.dv + j] * o.data()[(i0 + i) * k.dv + j];
        dvec[size_t(i0 + i)] = dsum;
      }
    }
    for (int64_t i0 = 0; i0 < k.sq; i0 += kBlockQ) {
      const int64_t bq = std::min(kBlockQ, k.sq - i0);
      const int64_t kend = key_end(k, i0 + bq);
      for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
        const int64_t bk = std::min(kBlockK, kend - j0);
        scores(k, q.data(), kk.data(), i0, bq, j0, bk, s.data());
        for (int64_t i = 0; i < bq; ++i)  // P = exp(S - lse)
          for (int64_t j = 0; j < bk; ++j)
            s[size_t(i * bk + j)] = fast_exp(s[size_t(i * bk + j)] - lse[size_t(i0 + i)]);
        // dV += Pᵀ dO
        blas().sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(k.dv), int(bq), 1.0f, s.data(), int(bk),
                     d_o.data() + i0 * k.dv, int(k.dv), 1.0f, dv.data() + j0 * k.dv, int(k.dv));
        // dP = dO Vᵀ
        blas().sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(k.dv), 1.0f, d_o.data() + i0 * k.dv,
                     int(k.dv), v.data() + j0 * k.dv, int(k.dv), 0.0f, dp.data(), int(bk));
        // dS = P (dP - D), reusing dp
        for (int64_t i = 0; i < bq; ++i)
          for (int64_t j = 0; j < bk; ++j)
            dp[size_t(i * bk + j)] = s[size_t(i * bk + j)] * (dp[size_t(i * bk + j)] - dvec[size_t(i0 + i)]);
        // dQ += dS K · scale;  dK += dSᵀ Q · scale
        blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(k.d), int(bk), k.scale, dp.data(), int(bk),
                     kk.data() + j0 * k.d, int(k.d), 1.0f, dq.data() + i0 * k.d, int(k.d));
        blas().sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(k.d), int(bq), k.scale, dp.data(), int(bk),
                     q.data() + i0 * k.d, int(k.d), 1.0f, dk.data() + j0 * k.d, int(k.d));
      }
    }
    // The packed output holds all of dq, then all of dk, then all of dv.
    const int64_t total_q = k.batch * nq, total_k = k.batch * nk;
    from_f32(k.dtype, dq.data(), nq, packed + size_t(b * nq) * isz);
    from_f32(k.dtype, dk.data(), nk, packed + size_t(total_q + b * nk) * isz);
    from_f32(k.dtype, dv.data(), nv, packed + size_t(total_q + total_k + b * nv) * isz);
  }
}

}  // namespace loupe::rt::backend::cpu

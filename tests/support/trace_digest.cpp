#include "tests/support/trace_digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "trace/reader.h"

namespace ds::test {

std::string trace_digest(const std::filesystem::path& trace) {
  const auto r = trace::TraceReader::open(trace);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  auto feed = [&](const auto& v) {
    EVP_DigestUpdate(ctx.get(), v.data(), v.size() * sizeof(v[0]));
  };
  for (int s : r.sequence_indices()) {
    const trace::SequenceInfo info = r.sequence(s);
    feed(info.tokens);
    for (const trace::SiteInfo& site : info.sites) feed(r.hidden(s, site.name, 0, info.rows));
    if (info.topk > 0) {
      const trace::TopKRows t = r.topk(s, 0, info.rows);
      feed(t.ids);
      feed(t.logits);
      feed(r.lse(s, 0, info.rows));
    }
    if (info.has_full_logits) feed(r.full_logits(s, 0, info.rows));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

}  // namespace ds::test

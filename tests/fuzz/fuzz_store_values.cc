// libFuzzer target for the parsers of untrusted values: what the rendezvous store (or etcd)
// holds under the job's keys, which any client with access may have written, and what a
// worker wrote to its torch error file.
//
// Input: one mode byte, then the value's text.
//   mode % 6: 0 round end, 1 node state (rR/state/I), 2 node descriptor (rR/slot/I),
//             3 node assignment (rR/assign/I), 4 expected-node names (rR/missing),
//             5 a worker's error file
//
// Beyond "does not crash" (no stack overflow on deep nesting, no exception other than
// pltrun::Error(Protocol) escaping), it checks, trapping (__builtin_trap) when one fails:
//   - a round end that decodes encodes to text that decodes to the same fields, and
//     fromStoreValue never throws and names the key when it falls back;
//   - a node state that decodes re-encodes to one that decodes to the same fields;
//   - an error file's message is never longer than the input allows (no runaway dump).

#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/group/error_file.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/expected_nodes.h"
#include "rendezvous/elastic/node_assignment.h"
#include "rendezvous/elastic/node_state.h"
#include "rendezvous/elastic/round_end.h"

namespace rdzv = pltrun::rdzv;

namespace {

void check(bool holds) {
  if (!holds) __builtin_trap();
}

// Only Error(Protocol) may leave a parser of store values.
template <typename Parse>
void expectProtocolErrorsOnly(Parse parse) {
  try {
    parse();
  } catch (const pltrun::Error& error) {
    check(error.code() == pltrun::ErrorCode::Protocol);
  }
}

void roundEnd(const std::string& text) {
  const rdzv::RoundEnd fallback = rdzv::RoundEnd::fromStoreValue("k/end", text);
  try {
    const rdzv::RoundEnd end = rdzv::RoundEnd::fromJson(text);
    const rdzv::RoundEnd again = rdzv::RoundEnd::fromJson(end.toJson());
    check(again.reason == end.reason && again.status == end.status && again.failures == end.failures &&
          again.final == end.final);
    check(fallback.reason == end.reason);
  } catch (const pltrun::Error& error) {
    check(error.code() == pltrun::ErrorCode::Protocol);
    check(fallback.reason == rdzv::RoundEnd::Reason::RendezvousFailed);
    check(fallback.message.find("'k/end'") != std::string::npos);
  }
  (void)fallback.describe();
}

void nodeState(const std::string& text) {
  const auto state = rdzv::decodeNodeState(text);
  if (!state) return;
  const auto again = rdzv::decodeNodeState(rdzv::encodeNodeState(*state));
  check(again && again->state == state->state && again->workers == state->workers &&
        again->ranks.size() == state->ranks.size());
  for (size_t index = 0; index < state->ranks.size(); ++index) {
    check(again->ranks[index].rank == state->ranks[index].rank && again->ranks[index].step == state->ranks[index].step);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0:
      roundEnd(text);
      break;
    case 1:
      nodeState(text);
      break;
    case 2:
      expectProtocolErrorsOnly([&] { (void)rdzv::nodeDescriptorFromJson(text); });
      break;
    case 3:
      expectProtocolErrorsOnly([&] { (void)rdzv::nodeAssignmentFromJson(text); });
      break;
    case 4:
      (void)rdzv::nodeNamesFromJson(text);
      break;
    default:
      if (const auto recorded = pltrun::parseErrorFile(text)) {
        // A value is shown at most as its own compact JSON, a little longer for escapes.
        check(recorded->message.size() <= 6 * text.size() + 64);
      }
      break;
  }
  return 0;
}

// Which expected nodes have not joined: matching by given name, host name, short name and
// address, each node accounting for one name.

#include "rendezvous/elastic/expected_nodes.h"

#include <catch2/catch.hpp>

using namespace pltrun::rdzv;

namespace {

NodeDescriptor node(const std::string& host, const std::string& addr, const std::string& name = "") {
  NodeDescriptor descriptor;
  descriptor.host = host;
  descriptor.addr = addr;
  descriptor.name = name;
  return descriptor;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("missing nodes: nobody joined, everyone is missing, in the expected order", "[expected_nodes]") {
  CHECK(missingNodes({"gpu-02", "gpu-01"}, {}) == Names{"gpu-02", "gpu-01"});
  CHECK(missingNodes({}, {node("a", "10.0.0.1")}).empty());
}

TEST_CASE("missing nodes: a node matches by its given name, host name or address", "[expected_nodes]") {
  const std::vector<NodeDescriptor> joined = {node("box", "10.0.0.1", "gpu-01"), node("gpu-02", "10.0.0.2"),
                                              node("h3", "10.0.0.3")};
  CHECK(missingNodes({"gpu-01", "gpu-02", "10.0.0.3", "gpu-04"}, joined) == Names{"gpu-04"});
}

TEST_CASE("missing nodes: short host names match either way round, addresses never shortened", "[expected_nodes]") {
  CHECK(missingNodes({"gpu-07", "gpu-08.cluster"}, {node("gpu-07.cluster.local", "10.0.0.7"), node("gpu-08", "x")})
            .empty());
  // Without case, and by the host name too where the node was given another name.
  CHECK(missingNodes({"GPU-07"}, {node("gpu-07.cluster", "x")}).empty());
  CHECK(missingNodes({"box.cluster"}, {node("box", "x", "node1")}).empty());
  // 10.0.0.1 is not "10": an address only matches itself.
  CHECK(missingNodes({"10.0.0.1"}, {node("10", "10.0.0.9")}) == Names{"10.0.0.1"});
}

TEST_CASE("missing nodes: each node accounts for one name, exact matches first", "[expected_nodes]") {
  // Two agents on one host are two expected entries.
  CHECK(missingNodes({"a", "a"}, {node("a", "10.0.0.1")}) == Names{"a"});
  CHECK(missingNodes({"a", "a"}, {node("a", "10.0.0.1"), node("a", "10.0.0.1")}).empty());
  // gpu-07.b joined: it is gpu-07.b exactly, not the short-name match for gpu-07.
  CHECK(missingNodes({"gpu-07", "gpu-07.b"}, {node("gpu-07.b", "10.0.0.1")}) == Names{"gpu-07"});
}

TEST_CASE("missing nodes: a long list is cut for one log line", "[expected_nodes]") {
  CHECK(nodeNamesText({"a"}) == "a");
  CHECK(nodeNamesText({"a", "b", "c"}) == "a, b, c");
  CHECK(nodeNamesText({"a", "b", "c", "d"}, 2) == "a, b and 2 more");
}

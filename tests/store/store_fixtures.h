#pragma once
// The Store implementations the conformance suite runs against. Each fixture makes any
// number of clients of one store; `kExtensions` says whether the store behind it honours
// pltrun's extensions, setEphemeral and setCloseNotice (torch's own server does not).

#include <memory>
#include <string>

#include "helpers/torch_store_server.h"
#include "pltrun/in_memory_store.h"
#include "pltrun/prefix_store.h"
#include "pltrun/tcp_store.h"
#include "store/primitive_store.h"
#include "store/server_thread.h"

namespace pltrun::test {

struct InMemoryFixture {
  static constexpr bool kExtensions = true;
  InMemoryStore root;
  std::unique_ptr<Store> client() { return root.connect(); }
};

struct PrefixFixture {
  static constexpr bool kExtensions = true;
  InMemoryStore root;
  std::unique_ptr<Store> client() {
    return std::make_unique<PrefixStore>("job/round1", std::shared_ptr<Store>(root.connect()));
  }
};

/// Store's default composite operations over the in-memory store's primitives.
struct PrimitivesOnlyFixture {
  static constexpr bool kExtensions = true;
  InMemoryStore root;
  std::unique_ptr<Store> client() { return std::make_unique<PrimitiveStore>(root.connect()); }
};

template <StoreDialect kDialect>
struct TcpFixture {
  static constexpr bool kExtensions = true;
  ServerThread server;
  std::unique_ptr<Store> client() { return std::make_unique<TcpStore>(server.clientOptions(kDialect)); }
};
using TcpTorch2Fixture = TcpFixture<StoreDialect::Torch2>;
using TcpTorch113Fixture = TcpFixture<StoreDialect::Torch113>;

struct TcpWithSecretFixture {
  static constexpr bool kExtensions = true;
  ServerThread server{[] {
    rdzv::StoreServerOptions options;
    options.secret = "correct horse battery staple";
    return options;
  }()};
  std::unique_ptr<Store> client() {
    TcpStoreOptions options = server.clientOptions();
    options.secret = "correct horse battery staple";
    return std::make_unique<TcpStore>(options);
  }
};

/// pltrun's client against PyTorch's own TCPStore server (Debian's torch 1.13).
struct TorchServerFixture {
  static constexpr bool kExtensions = false;
  TorchStoreServer server;
  std::unique_ptr<Store> client() {
    TcpStoreOptions options;
    options.port = server.port();
    options.dialect = StoreDialect::Torch113;
    options.connectTimeout = std::chrono::seconds(5);
    options.timeout = std::chrono::seconds(10);
    return std::make_unique<TcpStore>(options);
  }
};

}  // namespace pltrun::test

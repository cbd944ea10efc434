// torch's queues (TCPStore.queue_push / queue_pop / queue_len, torch 2.7 and later) on
// pltrun's store, driven on the wire by a client written from torch's TCPStore.cpp
// (store/torch_wire_client.h): the cases of torch's own test_queues* tests (order,
// blocking and non-blocking pops, timeouts, many producers and consumers, two clients
// answering each other), the limits, and the pltrun-store executable.

#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/store/store_protocol.h"
#include "store/raw_connection.h"
#include "store/server_thread.h"
#include "store/torch2_frames.h"
#include "store/torch_wire_client.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

TEST_CASE("queues: items come back in push order, with their length, across connections", "[store][queues]") {
  ServerThread server;
  TorchWireClient producer(server.port()), consumer(server.port());
  producer.push("q", "one");
  producer.push("q", "");
  producer.push("q", std::string("\0three\xff", 7));
  // A push has no reply: the producer's next answer means the store has taken them.
  CHECK(producer.length("q") == 3);
  CHECK(consumer.length("q") == 3);
  CHECK(consumer.check("q"));
  CHECK(consumer.keyCount() == 0);  // queues are not keys
  CHECK(consumer.pop("q", false) == "one");
  CHECK(consumer.pop("q", true) == "");
  CHECK(consumer.pop("q", false) == std::string("\0three\xff", 7));
  CHECK(consumer.length("q") == 0);
  CHECK_FALSE(consumer.check("q"));
}

TEST_CASE("queues: a non-blocking pop of an empty queue says so and the connection goes on", "[store][queues]") {
  ServerThread server;
  TorchWireClient client(server.port());
  CHECK_THROWS_AS(client.pop("never", false), TorchWireClient::QueueEmpty);
  client.push("never", "now");
  CHECK(client.pop("never", false) == "now");
  CHECK(server.connections() == 1);
}

TEST_CASE("queues: a blocking pop waits for the push of another client", "[store][queues]") {
  ServerThread server;
  TorchWireClient consumer(server.port()), producer(server.port());
  std::string got, failure;
  std::thread waiting([&] {
    try {
      got = consumer.pop("work", true, 10s);
    } catch (const std::exception& error) {
      failure = error.what();
    } catch (...) {
      failure = "the blocking pop failed";
    }
  });
  // The pop is parked in the store before anything is pushed.
  for (int i = 0; i < 500 && server.waiters() == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(server.waiters() == 1);
  producer.push("work", "item");
  waiting.join();
  CHECK(failure.empty());
  CHECK(got == "item");
}

TEST_CASE("queues: a blocking pop that times out cancels its wait, and the item pushed later is there",
          "[store][queues]") {
  ServerThread server;
  TorchWireClient client(server.port());
  CHECK_THROWS_AS(client.pop("late", true, 200ms), TorchWireClient::WaitTimedOut);
  CHECK(server.waiters() == 0);
  client.push("late", "here");
  CHECK(client.pop("late", true, 200ms) == "here");
}

TEST_CASE("queues: many producers and consumers get every item exactly once", "[store][queues]") {
  ServerThread server;
  constexpr int kProducers = 4, kConsumers = 4, kItemsEach = 50;
  std::vector<std::unique_ptr<TorchWireClient>> producers, consumers;
  for (int i = 0; i < kProducers; ++i) producers.push_back(std::make_unique<TorchWireClient>(server.port()));
  for (int i = 0; i < kConsumers; ++i) consumers.push_back(std::make_unique<TorchWireClient>(server.port()));
  std::vector<std::vector<std::string>> received(kConsumers);
  std::atomic<int> failures{0};
  std::string failure;
  std::vector<std::thread> threads;
  // Consumers first: most of their pops block in the store until an item comes.
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      try {
        for (int i = 0; i < kProducers * kItemsEach / kConsumers; ++i)
          received[c].push_back(consumers[c]->pop("q", true, 20s));
      } catch (...) {
        ++failures;
      }
    });
  }
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      try {
        for (int i = 0; i < kItemsEach; ++i) producers[p]->push("q", std::to_string(p) + "/" + std::to_string(i));
      } catch (...) {
        ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  INFO(failure);
  CHECK(failures == 0);
  std::multiset<std::string> all;
  for (int c = 0; c < kConsumers; ++c) {
    // Each producer's items reach each consumer in the order they were pushed.
    std::vector<int> lastFrom(kProducers, -1);
    for (const std::string& item : received[c]) {
      all.insert(item);
      const int producer = std::stoi(item.substr(0, item.find('/')));
      const int index = std::stoi(item.substr(item.find('/') + 1));
      CHECK(index > lastFrom[producer]);
      lastFrom[producer] = index;
    }
  }
  CHECK(all.size() == static_cast<size_t>(kProducers * kItemsEach));
  for (int p = 0; p < kProducers; ++p) {
    for (int i = 0; i < kItemsEach; ++i) CHECK(all.count(std::to_string(p) + "/" + std::to_string(i)) == 1);
  }
  CHECK(producers[0]->length("q") == 0);
  CHECK(server.waiters() == 0);
}

TEST_CASE("queues: two clients answer each other through two queues", "[store][queues]") {
  // torch's test_queues_bidirectional: one side sends on "a" and reads the reply on "b".
  ServerThread server;
  TorchWireClient left(server.port()), right(server.port());
  std::atomic<int> failures{0};
  std::thread echo([&] {
    try {
      for (int i = 0; i < 20; ++i) right.push("b", right.pop("a", true, 10s) + "!");
    } catch (...) {
      ++failures;
    }
  });
  for (int i = 0; i < 20; ++i) {
    left.push("a", std::to_string(i));
    CHECK(left.pop("b", true, 10s) == std::to_string(i) + "!");
  }
  echo.join();
  CHECK(failures == 0);
}

TEST_CASE("queues: items are bounded like values, and a refused push closes only its connection", "[store][queues]") {
  rdzv::StoreServerOptions options;
  options.limits.maxValueSize = 1024;
  // Room for "kept" and four items of 1000 bytes, each charged its fixed cost
  // (rendezvous/store/store_costs.h: 5786 bytes in all), not a fifth.
  options.maxStoreBytes = 6000;
  ServerThread server(options);
  TorchWireClient healthy(server.port());
  healthy.push("q", "kept");
  SECTION("an item over the value limit") {
    TorchWireClient bad(server.port());
    bad.push("q", std::string(2048, 'x'));
    CHECK(bad.connection().closedByServer());
  }
  SECTION("items past the store's byte limit") {
    TorchWireClient bad(server.port());
    for (int i = 0; i < 8; ++i) bad.push("big", std::string(1000, 'y'));
    CHECK(bad.connection().closedByServer());
    // What was stored before the limit (4 items) stays; popping gives the bytes back.
    CHECK(healthy.length("big") == 4);
    for (int i = 0; i < 4; ++i) CHECK(healthy.pop("big", false).size() == 1000);
    healthy.push("big", std::string(1000, 'z'));
    CHECK(healthy.length("big") == 1);
  }
  CHECK(healthy.pop("q", false) == "kept");
}

TEST_CASE("queues: the pltrun-store executable serves them", "[store][queues][executable]") {
  TempDir dir;
  ChildProcess store({PLTRUN_STORE_BINARY, "--port", "0"}, {}, dir / "out.txt");
  std::string line;
  for (int i = 0; i < 1000 && line.find('\n') == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
    line = readFile(dir / "out.txt");
  }
  REQUIRE(line.rfind("listening on 127.0.0.1:", 0) == 0);
  const int port = std::stoi(line.substr(line.rfind(':') + 1));
  {
    TorchWireClient producer(port), consumer(port);
    producer.push("jobs", "1");
    CHECK(consumer.pop("jobs", true, 5s) == "1");
    CHECK(consumer.length("jobs") == 0);
  }
  store.signal(SIGTERM);
  CHECK(store.wait(10s).status == 0);
}

TEST_CASE("barrier: the last of N arrivals releases every participant", "[store][barrier]") {
  ServerThread server;
  TorchWireClient first(server.port()), second(server.port()), last(server.port());
  first.arrive("b", 3);
  second.arrive("b", 3);
  for (int i = 0; i < 500 && server.waiters() < 2; ++i) std::this_thread::sleep_for(10ms);
  CHECK(server.waiters() == 2);
  last.barrier("b", 3);  // the third: answered at once
  first.awaitStopWaiting(5s);
  second.awaitStopWaiting(5s);
  CHECK(server.waiters() == 0);
  // The counter is a key, as under torch's server: a fourth arrival passes at once.
  TorchWireClient late(server.port());
  late.barrier("b", 3, 1s);
}

TEST_CASE("barrier: a participant that times out cancels, and the connection goes on", "[store][barrier]") {
  ServerThread server;
  TorchWireClient alone(server.port());
  CHECK_THROWS_AS(alone.barrier("never", 2, 200ms), TorchWireClient::WaitTimedOut);
  CHECK(server.waiters() == 0);
  alone.push("q", "after");
  CHECK(alone.pop("q", false) == "after");
}

TEST_CASE("barrier: on a key that holds text, only that connection is closed", "[store][barrier]") {
  ServerThread server;
  TcpStore client(server.clientOptions());
  client.set("text", "abc");  // pltrun's client adds torch's "/" too
  TorchWireClient bad(server.port());
  bad.arrive("text", 2);
  CHECK(bad.connection().closedByServer());
  CHECK(client.get("text", 5s) == "abc");
}

TEST_CASE("LIST_KEYS lists every key, and a list over the reply limit closes only that connection", "[store][server]") {
  rdzv::StoreServerOptions options;
  options.limits.maxReplySize = 1024;
  ServerThread server(options);
  TcpStore client(server.clientOptions());
  client.set("a", "1");  // the wire keys "/a" and "/init/": pltrun's client adds torch's "/"
  client.set("init/", "2");
  RawConnection raw(server.port());
  raw.send(validate() + std::string(1, '\x11'));
  const std::string count = raw.receive(8);
  REQUIRE(count.size() == 8);
  CHECK(count[0] == 2);
  // Two keys, each a u64 length and its bytes, in no particular order.
  const std::string keys = raw.receive(2 * 8 + 2 + 6);
  CHECK(keys.find("/a") != std::string::npos);
  CHECK(keys.find("/init/") != std::string::npos);
  for (int i = 0; i < 100; ++i) client.set("key-" + std::to_string(i), "");  // about 1.5 KiB of keys
  RawConnection large(server.port());
  large.send(validate() + std::string(1, '\x11'));
  CHECK(large.closedByServer());
  CHECK(client.get("a", 5s) == "1");
}

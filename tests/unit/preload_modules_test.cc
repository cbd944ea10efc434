// parsePreloadModules: --preload's list of Python modules, checked before anything starts.

#include "launcher/plan/preload_modules.h"

#include <catch2/catch.hpp>

#include "pltrun/error.h"

using pltrun::parsePreloadModules;

TEST_CASE("preload modules: a comma list of dotted names, spaces around them ignored", "[preload_modules]") {
  CHECK(parsePreloadModules("torch") == std::vector<std::string>{"torch"});
  CHECK(parsePreloadModules("torch, numpy ,torch.distributed,_private") ==
        std::vector<std::string>{"torch", "numpy", "torch.distributed", "_private"});
}

TEST_CASE("preload modules: what is not a module name is refused, naming it", "[preload_modules]") {
  for (const char* bad : {"", "torch,", "1torch", "torch..nn", "torch.", "to rch", "torch;os", "../torch"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parsePreloadModules(bad), Catch::Contains("is not a Python module name"));
  }
}

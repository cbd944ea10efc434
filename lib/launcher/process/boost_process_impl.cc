// Boost.Process v2 in Boost 1.81 is not header-only: its implementation is compiled once,
// here, with BOOST_PROCESS_V2_SEPARATE_COMPILATION defined for the whole target.
#include <boost/process/v2/src.hpp>

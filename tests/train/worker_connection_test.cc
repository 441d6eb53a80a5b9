// The worker's side of the front door (worker_connection.h) against what may answer there.
#include "transient/train/worker_connection.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "transient/core/error.h"
#include "transient/report/live_dashboard.h"
#include "transient/train/channel.h"

namespace transient::train {
namespace {

// The dashboard's port is the other one a coordinator prints: a worker sent there is told that
// a web server answered, and where the coordinator's address is.
TEST(WorkerConnection, ADashboardAnsweringIsNamedAsAWebServer) {
  const std::string dir = ::testing::TempDir() + "/worker_connection_dashboard";
  std::filesystem::create_directories(dir);
  report::LiveDashboard dashboard(dir, "token", "127.0.0.1", 0);
  try {
    Connection connection(parse_endpoint(dashboard.address(), "--coordinator"), "token", "");
    FAIL() << "a web server admitted the worker";
  } catch (const InputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("the coordinator at " + dashboard.address() +
                        " did not admit this worker: it answered as a web server (\"HTTP/1.1 "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("\"), such as the job's dashboard, not as its coordinator, whose address "
                        "is on the coordinator's \"listening on\" line and in "
                        "JOB/coordinator.json (\"front_door\")"),
              std::string::npos)
        << what;
  }
}

// --interface IFNAME: the worker listens for its peers at that interface's address; an interface
// this host does not have is refused naming it and the ones it has.
TEST(WorkerConnection, AnInterfaceIsItsAddressAndAnUnknownOneIsRefusedByName) {
  EXPECT_EQ(interface_address("lo", "--interface"), "127.0.0.1");
  try {
    interface_address("nosuch0", "--interface");
    FAIL() << "an interface this host lacks was taken";
  } catch (const InputError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("--interface: no network interface \"nosuch0\" with an address here; "
                         "this host has: ",
                         0),
              0u)
        << what;
    EXPECT_NE(what.find("lo"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace transient::train

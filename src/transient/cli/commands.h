// The subcommands of the `transient` program. Each add_* function declares one subcommand (or a
// group) on `app` with its flags and a callback that does the work; the callback throws
// InputError for bad input, which main() turns into one `error: ...` line and exit code 2.
#pragma once

#include <CLI/CLI.hpp>

namespace transient::launch {
class ForkServer;
}

namespace transient::cli {

// `transient catalog list|show`: the instance catalogs (cloud/catalog_registry.h).
void add_catalog_command(CLI::App& app);
// `transient market list|show|sample|startup`: revocation, availability and start-up models.
void add_market_command(CLI::App& app);
// `transient train` and the `transient worker` process it starts (needs TRANSIENT_WITH_TORCH);
// train starts its local workers from `fork_server` when given (launch/fork_server.h).
void add_train_commands(CLI::App& app, launch::ForkServer* fork_server = nullptr);
// `transient simulate`: discrete-event simulation of a job on a transient cluster.
void add_simulate_command(CLI::App& app);
// `transient fit`: fits the throughput models on measurements and cross-validates them.
void add_fit_command(CLI::App& app);
// `transient predict`: a cluster's speed from a throughput model.
void add_predict_command(CLI::App& app);
// `transient plan`: which cluster to rent for a deadline or a budget (plan/planner.h).
void add_plan_command(CLI::App& app);
// `transient profile`: a model's FLOPs, parameters and step time as a workload profile
// (needs TRANSIENT_WITH_TORCH).
void add_profile_command(CLI::App& app);
// `transient report`: a job directory or a simulate/plan --json output as an HTML page.
void add_report_command(CLI::App& app);
// `transient status`: where a job stands, from its job directory.
void add_status_command(CLI::App& app);
}  // namespace transient::cli

// `paratune`: the command-line face of the probe, the advisor, the policy and the tuning log (cli/app.h).
#include <string>
#include <vector>

#include "app.h"

int main(int argc, char** argv) { return paratune::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc)); }

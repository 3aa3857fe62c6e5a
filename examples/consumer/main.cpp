// Allocates a batch of 7 tasks over workers whose mean task times are 1, 2 and 4 seconds.
#include <ata/ata.hpp>
#include <iostream>
#include <vector>

int main() {
  ata::OraclePolicy oracle(std::vector<double>{1.0, 2.0, 4.0});
  const ata::Allocation a = oracle.allocate(7);
  std::cout << "allocation:";
  for (std::size_t tasks : a) std::cout << ' ' << tasks;
  std::cout << "\n";
  return a.total() == 7 && a[0] == 4 ? 0 : 1;
}

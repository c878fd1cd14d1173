"""Engine test fixtures."""
import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    # The nets here are tiny: one thread is faster and keeps the suite polite on a shared 2-core box.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""Networks: the MLP used for advantage and strategy nets."""

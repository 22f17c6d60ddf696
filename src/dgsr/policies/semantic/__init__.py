"""The semantic policy: semantic backpropagation of the target through the current formula, an
operand library evaluated once per trial, and the policy that matches the two."""

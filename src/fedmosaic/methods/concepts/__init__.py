"""F-CMs (Federated Concept-Based Models): causal-graph fusion, concept models, growth."""

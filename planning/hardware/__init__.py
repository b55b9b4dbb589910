"""GPU hardware: detection from Node Feature Discovery, vendor operators, capacity. PURE."""

import numpy as np
import pandas as pd

np.set_printoptions(precision=2)
pd.set_option("display.max_rows", 6)

data = np.linspace(0, 1, 7)
frame = pd.DataFrame({"x": np.arange(20), "y": np.arange(20) * 0.5})

print(data)

print(frame)

summary = frame.describe()
print(summary.loc["mean"])

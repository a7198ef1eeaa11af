Bb_scaleJ
ף<
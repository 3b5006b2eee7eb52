<?php
// /pong for Apache with mod_php: the 4-byte body of reference experiment 003.
header('Content-Type: text/plain');
echo 'PONG';
